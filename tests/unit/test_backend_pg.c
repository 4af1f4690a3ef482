/* test_backend_pg.c - the postgres backend against a live PostgreSQL.
 *
 *   test_backend_pg CONNINFO STOP-SCRIPT START-SCRIPT
 *
 * tests/integration/test_backend_pg.sh starts a private server and passes
 * its connection string and two scripts that stop and start it again. The
 * backend runs on a libevent loop through a small struct backend_host of
 * this file's own; a side connection (plain libpq) prepares races, holds
 * row locks and writes behind a cursor's back. */
#include <event2/event.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/registry.h"
#include "backends/postgres.h"
#include "tests/unit/tap.h"

static struct event_base *base;
static const char *conninfo, *stop_script, *start_script;

/* ---- a minimal host over libevent ---- */

struct t_timer {
    struct event *ev;
    void (*fn)(void *);
    void *arg;
};

struct t_watch {
    struct event *ev;
    int fd;
    void (*fn)(void *, unsigned);
    void *arg;
};

/* libevent callback of a one-shot timer: frees it, then runs it. */
static void t_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct t_timer *t = arg;
    void (*fn)(void *) = t->fn;
    void *fa = t->arg;
    (void)fd;
    (void)what;
    event_free(t->ev);
    free(t);
    fn(fa);
}

/* host timer_add: a one-shot libevent timer. */
static void *t_timer_add(void *arg, unsigned ms, void (*fn)(void *), void *fn_arg)
{
    struct t_timer *t = calloc(1, sizeof *t);
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    (void)arg;
    if (!t)
        return NULL;
    t->fn = fn;
    t->arg = fn_arg;
    t->ev = evtimer_new(base, t_timer_cb, t);
    evtimer_add(t->ev, &tv);
    return t;
}

/* host timer_cancel: frees a timer that has not fired. */
static void t_timer_cancel(void *arg, void *timer)
{
    struct t_timer *t = timer;
    (void)arg;
    event_free(t->ev);
    free(t);
}

/* libevent callback of a watch: readiness as BACKEND_FD_* bits. */
static void t_watch_cb(evutil_socket_t fd, short what, void *arg)
{
    struct t_watch *w = arg;
    (void)fd;
    w->fn(w->arg, ((what & EV_READ) ? BACKEND_FD_READ : 0) | ((what & EV_WRITE) ? BACKEND_FD_WRITE : 0));
}

/* (Re)creates the libevent event of a watch for events. */
static void t_watch_set(struct t_watch *w, unsigned events)
{
    short ev = EV_PERSIST | ((events & BACKEND_FD_READ) ? EV_READ : 0) |
               ((events & BACKEND_FD_WRITE) ? EV_WRITE : 0);
    if (w->ev)
        event_free(w->ev);
    w->ev = event_new(base, w->fd, ev, t_watch_cb, w);
    if (events)
        event_add(w->ev, NULL);
}

/* host fd_watch: a persistent (level-triggered) libevent event. */
static void *t_fd_watch(void *arg, int fd, unsigned events, void (*fn)(void *, unsigned), void *fn_arg)
{
    struct t_watch *w = calloc(1, sizeof *w);
    (void)arg;
    if (!w)
        return NULL;
    w->fd = fd;
    w->fn = fn;
    w->arg = fn_arg;
    t_watch_set(w, events);
    return w;
}

/* host fd_modify: the same watch, other events. */
static void t_fd_modify(void *arg, void *watch, unsigned events)
{
    (void)arg;
    t_watch_set(watch, events);
}

/* host fd_unwatch. */
static void t_fd_unwatch(void *arg, void *watch)
{
    struct t_watch *w = watch;
    (void)arg;
    event_free(w->ev);
    free(w);
}

static const struct backend_host host = {
    NULL, t_timer_add, t_timer_cancel, t_fd_watch, t_fd_modify, t_fd_unwatch,
};

/* ---- calls, waited for on the loop ---- */

struct waiter {
    struct backend_call call;
    int fired;
    unsigned char kbuf[65536], vbuf[512];
};

/* done(): the borrowed key and value are valid only until done returns,
   so they are copied into the waiter (keys whole, up to backend.h's 64
   KiB; the tests use short values). */
static void on_done(struct backend_call *c)
{
    struct waiter *w = c->arg;
    w->fired++;
    if (c->key) {
        c->key_len = c->key_len < sizeof w->kbuf ? c->key_len : sizeof w->kbuf;
        memcpy(w->kbuf, c->key, c->key_len);
        c->key = w->kbuf;
    }
    if (c->val) {
        c->val_len = c->val_len < sizeof w->vbuf ? c->val_len : sizeof w->vbuf;
        memcpy(w->vbuf, c->val, c->val_len);
        c->val = w->vbuf;
    }
}

/* A fresh waiter whose call reports to on_done. */
static void w_init(struct waiter *w)
{
    memset(w, 0, sizeof *w);
    w->call.done = on_done;
    w->call.arg = w;
}

/* The final status of a call that returned rc (runs the loop while it is
   pending; 90 s at most). */
static int w_wait(struct waiter *w, int rc)
{
    time_t t0 = time(NULL);
    if (rc != BACKEND_PENDING)
        return rc;
    while (!w->fired && time(NULL) - t0 < 90)
        event_base_loop(base, EVLOOP_ONCE);
    if (!w->fired)
        return -1000;
    return w->call.status;
}

/* Opens a store on the test database with up to two extra params; NULL
   on failure (err says why). */
static struct backend_store *open_store(const char *extra, const char *extra2, char *err)
{
    char ci[600];
    const char *params[4] = { ci, extra, extra2, NULL };
    struct backend_options o = { 0 };
    struct backend_store *st = NULL;
    snprintf(ci, sizeof ci, "conninfo=%s", conninfo);
    o.params = params;
    o.host = &host;
    int rc = backend_postgres_ops.open(&o, &st, err, 256);
    return rc == BACKEND_OK ? st : NULL;
}

/* Gets key; copies the value into out (NUL-terminated) when found. */
static int kget(struct backend_store *st, const char *key, char *out, size_t outlen)
{
    struct waiter w;
    w_init(&w);
    int rc = w_wait(&w, backend_postgres_ops.get_v2(st, key, strlen(key), &w.call));
    if (rc == BACKEND_OK && out) {
        size_t n = w.call.val_len < outlen - 1 ? w.call.val_len : outlen - 1;
        memcpy(out, w.call.val, n);
        out[n] = 0;
    }
    if (rc < 0 && rc != BACKEND_NOTFOUND)
        printf("# get %s: %d %s\n", key, rc, w.call.err);
    return rc;
}

/* A value whose version (bytes 1..8) is ver, then text. */
static size_t mkval(unsigned char *buf, uint64_t ver, const char *text)
{
    buf[0] = 'V';
    for (int i = 8; i >= 1; i--, ver >>= 8)
        buf[i] = (unsigned char)ver;
    size_t n = strlen(text);
    memcpy(buf + 9, text, n);
    return 9 + n;
}

/* Applies writes; returns the status and fills the waiter's results. */
static int kapply(struct backend_store *st, const struct backend_write *wr,
                  const struct backend_cond *cond, size_t n, int counts, struct waiter *w)
{
    w_init(w);
    w->call.want_counts = counts;
    int rc = w_wait(w, backend_postgres_ops.apply_v2(st, wr, cond, n, &w->call));
    if (rc < 0 && rc != BACKEND_CONFLICT)
        printf("# apply: %d %s\n", rc, w->call.err);
    return rc;
}

/* One unconditional put. */
static int kput(struct backend_store *st, const char *key, const char *val)
{
    struct waiter w;
    struct backend_write wr = { BACKEND_PUT, key, strlen(key), val, strlen(val) };
    return kapply(st, &wr, NULL, 1, 0, &w);
}

/* One unconditional delete. */
static int kdel(struct backend_store *st, const char *key)
{
    struct waiter w;
    struct backend_write wr = { BACKEND_DELETE, key, strlen(key), NULL, 0 };
    return kapply(st, &wr, NULL, 1, 0, &w);
}

/* Scans [start, end) and writes "k1,k2,..." (keys printed as hex when
   binary) into out; returns the count or a failure. */
static int scan(struct backend_store *st, const void *start, size_t sl, const void *end, size_t el,
                char *out, size_t outlen)
{
    struct backend_iter *it;
    char err[256];
    int n = 0;
    size_t o = 0;
    out[0] = 0;
    if (backend_postgres_ops.iter_open(st, start, sl, end, el, &it, err, sizeof err) != BACKEND_OK)
        return -1;
    for (;;) {
        struct waiter w;
        w_init(&w);
        int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
        if (rc <= 0) {
            backend_postgres_ops.iter_close(it);
            if (rc < 0)
                printf("# scan: %d %s\n", rc, w.call.err);
            return rc < 0 ? rc : n;
        }
        n++;
        const unsigned char *k = w.call.key;
        if (n > 1 && o + 1 < outlen)
            out[o++] = ',';
        for (size_t i = 0; i < w.call.key_len && o + 3 < outlen; i++) {
            int text = (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '1' && k[i] <= '9');
            o += (size_t)snprintf(out + o, outlen - o, text ? "%c" : "%02x", k[i]);
        }
        out[o] = 0;
    }
}

/* Runs SQL on the side connection (prints a failure). */
static PGresult *side_exec(PGconn *side, const char *sql)
{
    PGresult *r = PQexec(side, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        printf("# side: %s: %s", sql, PQerrorMessage(side));
    return r;
}

/* side_exec, result dropped. */
static void side_run(PGconn *side, const char *sql)
{
    PQclear(side_exec(side, sql));
}

/* ---- the tests ---- */

static void test_open(void)
{
    struct backend_options o = { 0 };
    struct backend_store *st = NULL;
    char err[256] = "";
    const char *params[] = { "conninfo=host=/nonexistent-dir port=1", NULL };
    o.params = params;
    TEST_EQ_INT(backend_postgres_ops.open(&o, &st, err, sizeof err), BACKEND_INVALID,
                "open without host hooks is refused");
    o.host = &host;
    TEST_EQ_INT(backend_postgres_ops.open(&o, &st, err, sizeof err), BACKEND_UNAVAILABLE,
                "open with an unreachable database fails");
    TEST_CHECK(strstr(err, "connect") != NULL, "and says it cannot connect");
    const char *bad[] = { "pool-size=0", NULL };
    o.params = bad;
    TEST_EQ_INT(backend_postgres_ops.open(&o, &st, err, sizeof err), BACKEND_INVALID,
                "pool-size=0 is refused");
    TEST_CHECK(backend_postgres_ops.version == 3 && backend_postgres_ops.caps ==
               (BACKEND_CAP_DEFERS | BACKEND_CAP_SHARED) && !backend_postgres_ops.get &&
               !backend_postgres_ops.apply && !backend_postgres_ops.iter_next,
               "vtable: version 3, defers and shared, no v1 methods");
}

/* A database whose schema version is newer is refused. */
static void test_schema(PGconn *side)
{
    char err[256] = "";
    side_run(side, "UPDATE tabled_meta SET value = 99 WHERE name = 'schema_version'");
    struct backend_store *st = open_store(NULL, NULL, err);
    TEST_CHECK(!st && strstr(err, "newer"), "a newer schema version is refused");
    printf("# %s\n", err);
    if (st)
        backend_postgres_ops.close(st);
    side_run(side, "UPDATE tabled_meta SET value = 2 WHERE name = 'schema_version'");
}

/* A database of schema version 1 (tabled_kv keyed by k alone) is upgraded
   at open, its rows kept; a tabled_kv of the old layout with no version
   row (made by hand from an older README) is refused, saying why. Its
   own side connection: the commits it counts would reach the statistics
   later and spoil test_batch100's count. */
static void test_migrate(void)
{
    char err[256] = "", out[512];
    PGconn *side = PQconnectdb(conninfo);
    side_run(side, "DROP TABLE IF EXISTS tabled_kv, tabled_meta");
    side_run(side, "CREATE TABLE tabled_meta (name text PRIMARY KEY, value bigint NOT NULL)");
    side_run(side, "CREATE TABLE tabled_kv (k bytea PRIMARY KEY, v bytea NOT NULL, "
             "ver bigint NOT NULL)");
    side_run(side, "INSERT INTO tabled_meta VALUES ('schema_version', 1)");
    side_run(side, "INSERT INTO tabled_kv VALUES ('\\x62', '\\x42', 0), ('\\x6100', '\\x43', 0), "
             "('\\x61', '\\x410000000000000007', 7), "
             "(decode(repeat('7a', 2600), 'hex'), '\\x5a', 0)");
    struct backend_store *st = open_store(NULL, NULL, err);
    TEST_CHECK(st != NULL, "a version-1 database opens");
    if (!st) {
        printf("# %s\n", err);
        PQfinish(side);
        return;
    }
    PGresult *r = side_exec(side, "SELECT value FROM tabled_meta");
    TEST_CHECK(PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "2"),
               "and is upgraded to version 2");
    PQclear(r);
    r = side_exec(side, "SELECT count(*) FROM pg_class WHERE relname LIKE 'tabled_kv%'");
    TEST_CHECK(PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "2"),
               "leaving only tabled_kv and its primary key");
    PQclear(r);
    TEST_EQ_INT(scan(st, "", 0, "c", 1, out, sizeof out), 3, "its rows are kept");
    TEST_EQ_STR(out, "a,a00,b", "in order");
    TEST_EQ_INT(kget(st, "b", out, sizeof out), BACKEND_OK, "found by key");
    TEST_EQ_STR(out, "B", "with their values");
    static char z[2601];
    memset(z, 'z', 2600);
    TEST_EQ_INT(kget(st, z, out, sizeof out), BACKEND_OK, "a 2600-byte key of version 1 is found");
    struct waiter w;
    struct backend_write p = { BACKEND_DELETE, "a", 1, NULL, 0 };
    struct backend_cond c = { BACKEND_EXPECT_VERSION, 6 };
    TEST_EQ_INT(kapply(st, &p, &c, 1, 0, &w), BACKEND_CONFLICT, "versions are kept: a stale one fails");
    c.version = 7;
    TEST_EQ_INT(kapply(st, &p, &c, 1, 0, &w), BACKEND_OK, "the kept one holds");
    backend_postgres_ops.close(st);
    st = open_store(NULL, NULL, err);
    TEST_CHECK(st && kget(st, "b", out, sizeof out) == BACKEND_OK && !strcmp(out, "B"),
               "the upgraded database opens again as it is");
    if (st)
        backend_postgres_ops.close(st);

    side_run(side, "DROP TABLE tabled_kv, tabled_meta");
    side_run(side, "CREATE TABLE tabled_kv (k bytea, v bytea NOT NULL, ver bigint NOT NULL, "
             "PRIMARY KEY (k))");
    st = open_store(NULL, NULL, err);
    TEST_CHECK(!st && strstr(err, "lacks the columns"),
               "an old-layout tabled_kv without a version row is refused");
    printf("# %s\n", err);
    if (st)
        backend_postgres_ops.close(st);
    side_run(side, "DROP TABLE tabled_kv, tabled_meta");
    PQfinish(side);
}

/* get, put, overwrite, empty value, delete, bad key, the probe. */
static void test_basic(struct backend_store *st)
{
    char v[64];
    struct waiter w;
    TEST_EQ_INT(kget(st, "nokey", v, sizeof v), BACKEND_NOTFOUND, "get of an absent key");
    TEST_EQ_INT(kput(st, "alpha", "one"), BACKEND_OK, "put");
    TEST_EQ_INT(kget(st, "alpha", v, sizeof v), BACKEND_OK, "get after put");
    TEST_EQ_STR(v, "one", "value read back");
    TEST_EQ_INT(kput(st, "alpha", "two"), BACKEND_OK, "overwrite");
    kget(st, "alpha", v, sizeof v);
    TEST_EQ_STR(v, "two", "overwritten value read back");
    TEST_EQ_INT(kput(st, "empty", ""), BACKEND_OK, "put of an empty value");
    w_init(&w);
    int rc = w_wait(&w, backend_postgres_ops.get_v2(st, "empty", 5, &w.call));
    TEST_CHECK(rc == BACKEND_OK && w.call.val && w.call.val_len == 0,
               "an empty value is found with a non-NULL pointer");
    TEST_EQ_INT(kdel(st, "alpha"), BACKEND_OK, "delete");
    TEST_EQ_INT(kget(st, "alpha", v, sizeof v), BACKEND_NOTFOUND, "get after delete");
    TEST_EQ_INT(kdel(st, "alpha"), BACKEND_OK, "delete of an absent key is no error");
    kdel(st, "empty");
    w_init(&w);
    TEST_EQ_INT(backend_postgres_ops.get_v2(st, "", 0, &w.call), BACKEND_INVALID, "empty key refused");
    w_init(&w);
    TEST_EQ_INT(backend_postgres_ops.apply_v2(st, NULL, NULL, 0, &w.call), BACKEND_OK,
                "apply of nothing (the probe) is OK while connected");
}

/* Key number i of test_long_keys: A is 2600 bytes (the stored prefix,
   PG_KEY_PREFIX) ending in 0x80, so that keys around it share kp in
   every way: shorter, equal, longer, and longer keys sharing it. Writes
   the key into k and returns its length. */
static size_t long_key(int i, unsigned char *k)
{
    unsigned seed = 99;
    for (size_t j = 0; j < 2600; j++) {
        seed = seed * 1103515245 + 12345;
        k[j] = (unsigned char)(seed >> 16);
    }
    k[2599] = 0x80;
    switch (i) {
    case 0: return 2599;                                        /* A minus its last byte */
    case 1: k[2599] = 0x00; return 2600;
    case 2: k[2599] = 0x00; k[2600] = 0xff; return 2601;        /* kp = key 1 */
    case 3: return 2600;                                        /* A */
    case 4: k[2600] = 0x00; return 2601;
    case 5: k[2600] = 0x00; k[2601] = 0x00; return 2602;
    case 6: k[2600] = 0x01; memset(k + 2601, 'b', 3000); return 5601;
    case 7: k[2600] = 0x01; memset(k + 2601, 'b', 2999); k[5600] = 'c'; return 5601;
    case 8: k[2600] = 0xff; return 2601;
    case 9: memset(k + 2600, 0xff, 4000); return 6600;
    case 10: k[2599] = 0x81; return 2600;
    case 11: k[2599] = 0x81; k[2600] = 'x'; return 2601;
    case 12: memset(k + 2600, 0xfe, 65536 - 2600); return 65536; /* backend.h's longest */
    }
    return 0;
}

enum { NLONG = 13 };

/* Scans [start, end) and checks the keys are exactly long_key(want[i]). */
static int long_scan(struct backend_store *st, const void *start, size_t sl, const void *end,
                     size_t el, const int *want, int n)
{
    static unsigned char k[65536];
    struct backend_iter *it;
    char err[256];
    int i = 0, ok = 1;
    if (backend_postgres_ops.iter_open(st, start, sl, end, el, &it, err, sizeof err) != BACKEND_OK)
        return 0;
    for (;; i++) {
        struct waiter w;
        w_init(&w);
        int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
        if (rc != 1) {
            ok &= rc == 0 && i == n;
            break;
        }
        size_t kl = i < n ? long_key(want[i], k) : 0;
        if (i >= n || w.call.key_len != kl || memcmp(w.call.key, k, kl)) {
            printf("# row %d: a key of %zu bytes, not key %d\n", i, w.call.key_len,
                   i < n ? want[i] : -1);
            ok = 0;
        }
    }
    backend_postgres_ops.iter_close(it);
    return ok;
}

/* Keys longer than the stored prefix (2600 bytes) up to backend.h's 64
   KiB: stored, found, ordered bytewise among keys sharing that prefix
   (the store's cursors fetch 3 rows a batch, so continuation falls inside
   such groups), as range bounds and seek targets, with expectations. */
static void test_long_keys(struct backend_store *st)
{
    static unsigned char keys[NLONG][65536], k[65536];
    size_t len[NLONG];
    struct backend_write wr[NLONG];
    char vals[NLONG][8];
    struct waiter w;
    for (int i = 0; i < NLONG; i++) {
        int j = (i * 5) % NLONG;                        /* written out of order */
        len[j] = long_key(j, keys[j]);
        snprintf(vals[j], sizeof vals[j], "v%d", j);
        wr[i] = (struct backend_write){ BACKEND_PUT, keys[j], len[j], vals[j], strlen(vals[j]) };
    }
    TEST_EQ_INT(kapply(st, wr, NULL, NLONG, 1, &w), BACKEND_OK,
                "13 keys of 2599 to 65536 bytes sharing a 2599-byte prefix, in one apply");
    TEST_EQ_INT(w.call.created, NLONG, "each a row of its own");
    int found = 0;
    for (int i = 0; i < NLONG; i++) {
        w_init(&w);
        int rc = w_wait(&w, backend_postgres_ops.get_v2(st, keys[i], len[i], &w.call));
        found += rc == BACKEND_OK && w.call.val_len == strlen(vals[i]) &&
                 !memcmp(w.call.val, vals[i], w.call.val_len);
    }
    TEST_EQ_INT(found, NLONG, "each found with its own value");
    w_init(&w);
    TEST_EQ_INT(w_wait(&w, backend_postgres_ops.get_v2(st, keys[6], 5600, &w.call)),
                BACKEND_NOTFOUND, "a long key's prefix (of more than 2600 bytes) is absent");
    static const int all[NLONG] = { 0, 1, 2, 3, 4, 5, 6, 7, 12, 8, 9, 10, 11 };
    TEST_CHECK(long_scan(st, "", 0, NULL, 0, all, NLONG), "a full scan: bytewise order");
    static const int mid[5] = { 4, 5, 6, 7, 12 };
    TEST_CHECK(long_scan(st, keys[4], len[4], keys[8], len[8], mid, 5),
               "[key 4, key 8): long keys as both bounds");
    static const int below[3] = { 0, 1, 2 }, upto[8] = { 3, 4, 5, 6, 7, 12, 8, 9 };
    TEST_CHECK(long_scan(st, keys[0], len[0], keys[3], len[3], below, 3) &&
                   long_scan(st, keys[3], len[3], keys[10], len[10], upto, 8),
               "[key 0, key 3), [key 3, key 10): bounds of exactly 2600 bytes");
    size_t kl = long_key(4, k);
    k[kl++] = 0x01;                                 /* between keys 5 and 6 */
    unsigned char *e = k + 65536 / 2;               /* A + 0x01 + 'b'*3000 + 'a' */
    long_key(3, e);
    e[2600] = 0x01;
    memset(e + 2601, 'b', 3000);
    e[5601] = 'a';
    static const int from[1] = { 6 };
    TEST_CHECK(long_scan(st, k, kl, e, 5602, from, 1), "bounds that are not stored keys, "
               "inside the group");
    struct backend_iter *it;
    char err[256];
    backend_postgres_ops.iter_open(st, keys[0], len[0], NULL, 0, &it, err, sizeof err);
    w_init(&w);
    int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_CHECK(rc == 1 && w.call.key_len == len[0], "cursor: the first key");
    TEST_EQ_INT(backend_postgres_ops.iter_seek(it, e, 5602), BACKEND_OK,
                "seek between two 5601-byte keys");
    w_init(&w);
    rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_CHECK(rc == 1 && w.call.key_len == len[7] && !memcmp(w.call.key, keys[7], len[7]),
               "after seek: the next key in byte order");
    backend_postgres_ops.iter_close(it);

    unsigned char v1[32];
    size_t l1 = mkval(v1, 77, "x");
    struct backend_write p = { BACKEND_PUT, keys[7], len[7], v1, l1 };
    struct backend_cond c = { BACKEND_EXPECT_ABSENT, 0 };
    TEST_EQ_INT(kapply(st, &p, &c, 1, 0, &w), BACKEND_CONFLICT,
                "ABSENT put of a present long key fails");
    c.expect = BACKEND_EXPECT_PRESENT;
    TEST_EQ_INT(kapply(st, &p, &c, 1, 0, &w), BACKEND_OK, "PRESENT put of it holds");
    c.expect = BACKEND_EXPECT_VERSION;
    c.version = 76;
    TEST_EQ_INT(kapply(st, &p, &c, 1, 0, &w), BACKEND_CONFLICT, "VERSION with a stale version fails");
    c.version = 77;
    p.op = BACKEND_DELETE;
    TEST_EQ_INT(kapply(st, &p, &c, 1, 1, &w), BACKEND_OK, "VERSION delete with its version holds");
    TEST_EQ_INT(w.call.removed, 1, "and removes it");
    w_init(&w);
    TEST_CHECK(w_wait(&w, backend_postgres_ops.get_v2(st, keys[7], len[7], &w.call)) ==
                   BACKEND_NOTFOUND &&
                   (w_init(&w), w_wait(&w, backend_postgres_ops.get_v2(st, keys[6], len[6],
                                                                       &w.call))) == BACKEND_OK,
               "it is gone; the key sharing its first 5600 bytes is not");
    for (int i = 0; i < NLONG; i++)
        wr[i].op = BACKEND_DELETE;
    TEST_EQ_INT(kapply(st, wr, NULL, NLONG, 1, &w), BACKEND_OK, "delete them all");
    TEST_EQ_INT(w.call.removed, NLONG - 1, "12 were left");
    char out[64];
    TEST_EQ_INT(scan(st, "", 0, NULL, 0, out, sizeof out), 0, "none is left");
}

/* Random keys of 2597 to 2603 bytes (one shared 2597-byte prefix, then up
   to 6 bytes of 0x00, 0x7f, 0x80, 0xff: every way around the stored
   prefix's length) and 40 random ranges [lo, hi) and exclusive resumes
   between them (3 rows a batch), checked against a sorted reference. */
struct rkey {
    unsigned char b[2604];
    size_t n;
};

/* qsort order of struct rkey: memcmp, shorter prefix first. */
static int rkey_cmp(const void *a, const void *b)
{
    const struct rkey *x = a, *y = b;
    int c = memcmp(x->b, y->b, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* A random key of the family (see test_long_random). */
static void rkey_make(struct rkey *k, unsigned *seed)
{
    static const unsigned char alpha[4] = { 0x00, 0x7f, 0x80, 0xff };
    memset(k->b, 'q', 2597);
    *seed = *seed * 1103515245 + 12345;
    k->n = 2597 + (*seed >> 16) % 7;
    for (size_t i = 2597; i < k->n; i++) {
        *seed = *seed * 1103515245 + 12345;
        k->b[i] = alpha[(*seed >> 16) % 4];
    }
}

static void test_long_random(struct backend_store *st)
{
    enum { N = 200, R = 40 };
    static struct rkey k[N];
    struct backend_write wr[N];
    struct waiter w;
    unsigned seed = 2600;
    size_t n = 0;
    while (n < N) {
        rkey_make(&k[n], &seed);
        int dup = 0;
        for (size_t j = 0; j < n && !dup; j++)
            dup = rkey_cmp(&k[j], &k[n]) == 0;
        n += !dup;
    }
    for (size_t i = 0; i < N; i++)
        wr[i] = (struct backend_write){ BACKEND_PUT, k[i].b, k[i].n, "r", 1 };
    TEST_EQ_INT(kapply(st, wr, NULL, N, 0, &w), BACKEND_OK,
                "200 random keys of 2597 to 2603 bytes in one apply");
    qsort(k, N, sizeof *k, rkey_cmp);
    int bad = 0;
    for (int r = 0; r < R; r++) {
        struct rkey lo, hi;
        rkey_make(&lo, &seed);
        rkey_make(&hi, &seed);
        if (rkey_cmp(&lo, &hi) > 0) {
            struct rkey t = lo;
            lo = hi;
            hi = t;
        }
        size_t i = 0;
        while (i < N && rkey_cmp(&k[i], &lo) < 0)
            i++;
        struct backend_iter *it;
        char err[256];
        backend_postgres_ops.iter_open(st, lo.b, lo.n, hi.b, hi.n, &it, err, sizeof err);
        for (;;) {
            w_init(&w);
            int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
            int want = i < N && rkey_cmp(&k[i], &hi) < 0;
            if (rc != want || (rc == 1 && (w.call.key_len != k[i].n ||
                                           memcmp(w.call.key, k[i].b, k[i].n)))) {
                if (!bad++)
                    printf("# range %d: row for reference %zu wrong (rc %d)\n", r, i, rc);
                break;
            }
            if (rc != 1)
                break;
            i++;
        }
        backend_postgres_ops.iter_close(it);
    }
    TEST_EQ_INT(bad, 0, "40 random ranges: the keys in byte order, resumed across batches");
    for (size_t i = 0; i < N; i++)
        wr[i] = (struct backend_write){ BACKEND_DELETE, k[i].b, k[i].n, NULL, 0 };
    kapply(st, wr, NULL, N, 0, &w);
}

/* Byte order of binary keys, range bounds and seek. */
static void test_order(struct backend_store *st)
{
    static const struct { const char *k; size_t n; } keys[] = {
        { "\xff\xff", 2 }, { "b", 1 }, { "\x00", 1 }, { "ab", 2 }, { "\xff", 1 },
        { "\x01", 1 }, { "\x00\xff", 2 }, { "abc", 3 }, { "\x00\x00", 2 }, { "a", 1 },
        { "\xff\x00", 2 }, { "a\x00", 2 },
    };
    char out[512];
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        struct waiter w;
        struct backend_write wr = { BACKEND_PUT, keys[i].k, keys[i].n, "x", 1 };
        kapply(st, &wr, NULL, 1, 0, &w);
    }
    int n = scan(st, "", 0, NULL, 0, out, sizeof out);
    TEST_EQ_INT(n, 12, "full scan returns every key");
    TEST_EQ_STR(out, "00,0000,00ff,01,a,a00,ab,abc,b,ff,ff00,ffff",
                "binary keys in memcmp order, shorter prefix first (0x00, 0xff, prefixes)");
    n = scan(st, "a", 1, "b", 1, out, sizeof out);
    TEST_EQ_STR(out, "a,a00,ab,abc", "range [a, b): start inclusive, end exclusive");
    n = scan(st, "\x00", 1, "\x01", 1, out, sizeof out);
    TEST_EQ_STR(out, "00,0000,00ff", "range [00, 01)");
    n = scan(st, "\xff", 1, NULL, 0, out, sizeof out);
    TEST_EQ_STR(out, "ff,ff00,ffff", "range [ff, end of keys)");
    n = scan(st, "", 0, "\x00\x00", 2, out, sizeof out);
    TEST_EQ_STR(out, "00", "range [start of keys, 0000)");
    n = scan(st, "ab", 2, "ab", 2, out, sizeof out);
    TEST_EQ_INT(n, 0, "an empty range");

    /* seek, within a cursor whose batches are 3 rows */
    struct backend_iter *it;
    char err[256];
    struct waiter w;
    backend_postgres_ops.iter_open(st, "a", 1, "\xff", 1, &it, err, sizeof err);
    w_init(&w);
    int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_CHECK(rc == 1 && w.call.key_len == 1 && !memcmp(w.call.key, "a", 1), "cursor: first key");
    TEST_EQ_INT(backend_postgres_ops.iter_seek(it, "abb", 3), BACKEND_OK, "seek forward");
    w_init(&w);
    rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_CHECK(rc == 1 && w.call.key_len == 3 && !memcmp(w.call.key, "abc", 3),
               "after seek: the first key >= the target");
    backend_postgres_ops.iter_seek(it, "\x00", 1);
    w_init(&w);
    rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_CHECK(rc == 1 && w.call.key_len == 1 && !memcmp(w.call.key, "a", 1),
               "seek below the start bound means the start");
    backend_postgres_ops.iter_seek(it, "c", 1);
    int got = 0;
    for (;;) {
        w_init(&w);
        rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
        if (rc != 1)
            break;
        got++;
    }
    TEST_CHECK(rc == 0 && got == 0, "seek past the last key below the end bound: end");
    backend_postgres_ops.iter_close(it);

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        struct backend_write wr = { BACKEND_DELETE, keys[i].k, keys[i].n, NULL, 0 };
        kapply(st, &wr, NULL, 1, 0, &w);
    }
    TEST_EQ_INT(scan(st, "", 0, NULL, 0, out, sizeof out), 0, "all deleted");
}

/* Random binary keys: the scan order equals qsort by memcmp/length. */
struct bkey {
    unsigned char b[4];
    size_t n;
};

/* qsort order of struct bkey: memcmp, shorter prefix first. */
static int bkey_cmp(const void *a, const void *b)
{
    const struct bkey *x = a, *y = b;
    int c = memcmp(x->b, y->b, x->n < y->n ? x->n : y->n);
    return c ? c : (int)x->n - (int)y->n;
}

/* 300 random binary keys in one apply come back in order. */
static void test_order_random(struct backend_store *st)
{
    enum { N = 300 };
    static struct bkey k[N];
    struct backend_write wr[N];
    struct waiter w;
    unsigned seed = 7;
    size_t n = 0;
    while (n < N) {
        seed = seed * 1103515245 + 12345;
        struct bkey c = { { 0 }, 1 + (seed >> 16) % 4 };
        for (size_t i = 0; i < c.n; i++) {
            seed = seed * 1103515245 + 12345;
            unsigned r = (seed >> 16) % 4;
            c.b[i] = r == 0 ? 0x00 : r == 1 ? 0xff : r == 2 ? 0x7f : 0x80;
        }
        int dup = 0;
        for (size_t j = 0; j < n && !dup; j++)
            dup = bkey_cmp(&k[j], &c) == 0;
        if (!dup)
            k[n++] = c;
    }
    for (size_t i = 0; i < N; i++)
        wr[i] = (struct backend_write){ BACKEND_PUT, k[i].b, k[i].n, "v", 1 };
    TEST_EQ_INT(kapply(st, wr, NULL, N, 0, &w), BACKEND_OK, "300 binary keys in one apply");
    qsort(k, N, sizeof *k, bkey_cmp);
    struct backend_iter *it;
    char err[256];
    backend_postgres_ops.iter_open(st, "", 0, NULL, 0, &it, err, sizeof err);
    size_t i = 0, bad = 0;
    for (;;) {
        w_init(&w);
        int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
        if (rc != 1)
            break;
        if (i >= N || w.call.key_len != k[i].n || memcmp(w.call.key, k[i].b, k[i].n)) {
            if (!bad++)
                printf("# first wrong key at %zu (length %zu)\n", i, w.call.key_len);
        }
        i++;
    }
    backend_postgres_ops.iter_close(it);
    TEST_CHECK(i == N && bad == 0, "300 random binary keys come back in backend.h's order");
    for (size_t j = 0; j < N; j++)
        wr[j].op = BACKEND_DELETE;
    kapply(st, wr, NULL, N, 0, &w);
}

/* Each expectation holding and failing, for puts and deletes; batches. */
static void test_conditions(struct backend_store *st)
{
    unsigned char v1[32], v2[32];
    size_t l1 = mkval(v1, 1000, "one"), l2 = mkval(v2, 2000, "two");
    char out[64];
    struct waiter w;
    struct backend_write put = { BACKEND_PUT, "ck", 2, v1, l1 };
    struct backend_cond c = { BACKEND_EXPECT_ABSENT, 0 };

    TEST_EQ_INT(kapply(st, &put, &c, 1, 1, &w), BACKEND_OK, "ABSENT put on an absent key holds");
    TEST_EQ_INT(w.call.created, 1, "and counts as created");
    TEST_EQ_INT(kapply(st, &put, &c, 1, 0, &w), BACKEND_CONFLICT, "ABSENT put on a present key fails");
    TEST_EQ_INT(w.call.failed, 0, "failed index 0");
    c.expect = BACKEND_EXPECT_PRESENT;
    struct backend_write put2 = { BACKEND_PUT, "ck", 2, v2, l2 };
    TEST_EQ_INT(kapply(st, &put2, &c, 1, 1, &w), BACKEND_OK, "PRESENT put on a present key holds");
    TEST_EQ_INT(w.call.created, 0, "and creates nothing");
    c.expect = BACKEND_EXPECT_VERSION;
    c.version = 1000;
    TEST_EQ_INT(kapply(st, &put, &c, 1, 0, &w), BACKEND_CONFLICT, "VERSION put with a stale version fails");
    kget(st, "ck", out, sizeof out);
    TEST_EQ_STR(out + 9, "two", "the failed write applied nothing");
    c.version = 2000;
    TEST_EQ_INT(kapply(st, &put, &c, 1, 0, &w), BACKEND_OK, "VERSION put with the current version holds");
    kget(st, "ck", out, sizeof out);
    TEST_EQ_STR(out + 9, "one", "and wrote");

    struct backend_write del = { BACKEND_DELETE, "ck", 2, NULL, 0 };
    c.version = 2000;
    TEST_EQ_INT(kapply(st, &del, &c, 1, 0, &w), BACKEND_CONFLICT, "VERSION delete with a stale version fails");
    c.version = 1000;
    TEST_EQ_INT(kapply(st, &del, &c, 1, 1, &w), BACKEND_OK, "VERSION delete with the current version holds");
    TEST_EQ_INT(w.call.removed, 1, "and counts as removed");
    c.expect = BACKEND_EXPECT_PRESENT;
    TEST_EQ_INT(kapply(st, &del, &c, 1, 0, &w), BACKEND_CONFLICT, "PRESENT delete of an absent key fails");
    TEST_EQ_INT(kapply(st, &put, &c, 1, 0, &w), BACKEND_CONFLICT, "PRESENT put of an absent key fails");
    c.expect = BACKEND_EXPECT_VERSION;
    TEST_EQ_INT(kapply(st, &put, &c, 1, 0, &w), BACKEND_CONFLICT, "VERSION put of an absent key fails");
    c.expect = BACKEND_EXPECT_ABSENT;
    TEST_EQ_INT(kapply(st, &del, &c, 1, 1, &w), BACKEND_OK, "ABSENT delete of an absent key holds");
    TEST_EQ_INT(w.call.removed, 0, "and removes nothing");
    TEST_EQ_INT(kget(st, "ck", out, sizeof out), BACKEND_NOTFOUND, "and leaves no row behind");

    /* a batch: the third write's expectation fails; nothing is applied */
    kput(st, "cb1", "old1");
    struct backend_write b[4] = {
        { BACKEND_PUT, "cb1", 3, "new1", 4 },
        { BACKEND_PUT, "cb2", 3, "new2", 4 },
        { BACKEND_PUT, "cb3", 3, "new3", 4 },
        { BACKEND_DELETE, "cb1", 3, NULL, 0 },
    };
    struct backend_cond bc[4] = {
        { BACKEND_EXPECT_PRESENT, 0 }, { BACKEND_EXPECT_ABSENT, 0 },
        { BACKEND_EXPECT_PRESENT, 0 }, { BACKEND_EXPECT_ANY, 0 },
    };
    TEST_EQ_INT(kapply(st, b, bc, 4, 1, &w), BACKEND_CONFLICT, "batch with a failing expectation");
    TEST_EQ_INT(w.call.failed, 2, "failed names the first failing write");
    kget(st, "cb1", out, sizeof out);
    TEST_EQ_STR(out, "old1", "earlier write of the batch not applied");
    TEST_EQ_INT(kget(st, "cb2", out, sizeof out), BACKEND_NOTFOUND, "ABSENT insert of the batch not applied");
    bc[2].expect = BACKEND_EXPECT_ABSENT;
    TEST_EQ_INT(kapply(st, b, bc, 4, 1, &w), BACKEND_OK, "the batch with expectations that hold");
    TEST_CHECK(w.call.created == 2 && w.call.removed == 1,
               "counts: cb2 and cb3 created, cb1 removed (later writes win)");
    TEST_EQ_INT(kget(st, "cb1", out, sizeof out), BACKEND_NOTFOUND, "the later delete of cb1 won");
    kdel(st, "cb2");
    kdel(st, "cb3");
}

/* want_counts of an unconditional batch. */
static void test_counts(struct backend_store *st)
{
    struct waiter w;
    kput(st, "n1", "x");
    kput(st, "n2", "x");
    struct backend_write b[5] = {
        { BACKEND_PUT, "n1", 2, "y", 1 },       /* exists */
        { BACKEND_PUT, "n3", 2, "y", 1 },       /* new */
        { BACKEND_PUT, "n3", 2, "z", 1 },       /* exists by now */
        { BACKEND_DELETE, "n2", 2, NULL, 0 },   /* exists */
        { BACKEND_DELETE, "n4", 2, NULL, 0 },   /* absent */
    };
    TEST_EQ_INT(kapply(st, b, NULL, 5, 1, &w), BACKEND_OK, "unconditional batch with counts");
    TEST_EQ_INT(w.call.created, 1, "created counts only the new key");
    TEST_EQ_INT(w.call.removed, 1, "removed counts only the existing key");
    kdel(st, "n1");
    kdel(st, "n3");
}

/* Same-array expectations that meet ABSENT's placeholder row: a later
   PRESENT/VERSION of a key checked ABSENT fails, an ABSENT delete leaves
   no row, and counts replay the writes over the store before the call. */
static void test_placeholders(struct backend_store *st)
{
    struct waiter w;
    char out[64];
    struct backend_write a[2] = {
        { BACKEND_PUT, "pa", 2, "1", 1 },
        { BACKEND_PUT, "pa", 2, "2", 1 },
    };
    struct backend_cond ca[2] = { { BACKEND_EXPECT_ABSENT, 0 }, { BACKEND_EXPECT_VERSION, 0 } };
    TEST_EQ_INT(kapply(st, a, ca, 2, 0, &w), BACKEND_CONFLICT, "ABSENT then VERSION 0 of one absent key");
    TEST_EQ_INT(w.call.failed, 1, "... the VERSION write fails");
    ca[1].expect = BACKEND_EXPECT_PRESENT;
    TEST_EQ_INT(kapply(st, a, ca, 2, 0, &w), BACKEND_CONFLICT, "ABSENT then PRESENT of one absent key");
    TEST_EQ_INT(w.call.failed, 1, "... the PRESENT write fails");
    TEST_EQ_INT(kget(st, "pa", out, sizeof out), BACKEND_NOTFOUND, "... nothing applied");
    struct backend_write d[3] = {
        { BACKEND_DELETE, "pb", 2, NULL, 0 },
        { BACKEND_PUT, "pc", 2, "1", 1 },
        { BACKEND_DELETE, "pc", 2, NULL, 0 },
    };
    struct backend_cond cd[3] = { { BACKEND_EXPECT_ABSENT, 0 }, { BACKEND_EXPECT_ABSENT, 0 },
                                  { BACKEND_EXPECT_ANY, 0 } };
    TEST_EQ_INT(kapply(st, d, cd, 3, 1, &w), BACKEND_OK, "ABSENT deletes and a put then delete");
    TEST_CHECK(w.call.created == 1 && w.call.removed == 1, "... created 1, removed 1");
    TEST_CHECK(kget(st, "pb", out, sizeof out) == BACKEND_NOTFOUND &&
               kget(st, "pc", out, sizeof out) == BACKEND_NOTFOUND, "... no placeholder is left");
    kput(st, "pd", "x");
    struct backend_write e[3] = {
        { BACKEND_DELETE, "pd", 2, NULL, 0 },
        { BACKEND_PUT, "pd", 2, "y", 1 },
        { BACKEND_PUT, "pe", 2, "y", 1 },
    };
    struct backend_cond ce[3] = { { BACKEND_EXPECT_PRESENT, 0 }, { BACKEND_EXPECT_PRESENT, 0 },
                                  { BACKEND_EXPECT_ANY, 0 } };
    TEST_EQ_INT(kapply(st, e, ce, 3, 1, &w), BACKEND_OK, "delete and put of a present key, both PRESENT");
    TEST_CHECK(w.call.created == 2 && w.call.removed == 1, "... created 2, removed 1");
    TEST_CHECK(kget(st, "pd", out, sizeof out) == BACKEND_OK && !strcmp(out, "y"), "... the put wins");
    kdel(st, "pd");
    kdel(st, "pe");
}

/* 100 writes: atomic on conflict, one transaction when applied. */
static void test_batch100(struct backend_store *st, PGconn *side)
{
    struct backend_write b[100];
    struct backend_cond c[100];
    char keys[100][8];
    struct waiter w;
    char out[512];
    for (int i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof keys[i], "h%03d", i);
        b[i] = (struct backend_write){ BACKEND_PUT, keys[i], 4, keys[i], 4 };
        c[i] = (struct backend_cond){ BACKEND_EXPECT_ABSENT, 0 };
    }
    kput(st, "h099", "x");                  /* the last expectation fails */
    TEST_EQ_INT(kapply(st, b, c, 100, 0, &w), BACKEND_CONFLICT, "100 writes, the last expectation fails");
    TEST_EQ_INT(w.call.failed, 99, "failed = 99");
    TEST_EQ_INT(scan(st, "h", 1, "i", 1, out, sizeof out), 1, "none of the 100 applied");
    kdel(st, "h099");
    PGresult *r = side_exec(side, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
    long long before = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    TEST_EQ_INT(kapply(st, b, c, 100, 0, &w), BACKEND_OK, "100 conditional writes in one apply");
    TEST_EQ_INT(scan(st, "h", 1, "i", 1, out, sizeof out), 100, "all 100 applied");
    sleep(1);                               /* the statistics collector lags */
    side_run(side, "SELECT pg_stat_clear_snapshot()");
    r = side_exec(side, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
    long long after = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    /* the apply, the scan's transaction and the side's own queries */
    TEST_CHECK(after - before <= 6, "the batch committed as one transaction (few commits counted)");
    printf("# commits during the batch and its check: %lld\n", after - before);
    for (int i = 0; i < 100; i++)
        b[i].op = BACKEND_DELETE;
    kapply(st, b, NULL, 100, 0, &w);
}

/* A batch is atomic for readers: scans through another store while a
   100-write batch commits see all of it or none. */
static void test_batch_readers(struct backend_store *st, struct backend_store *other)
{
    struct backend_write b[100];
    char keys[100][8], out[1024];
    struct waiter w;
    for (int i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof keys[i], "r%03d", i);
        b[i] = (struct backend_write){ BACKEND_PUT, keys[i], 4, "v", 1 };
    }
    int torn = 0, scans = 0;
    for (int round = 0; round < 5; round++) {
        w_init(&w);
        int rc = backend_postgres_ops.apply_v2(st, b, NULL, 100, &w.call);
        while (rc == BACKEND_PENDING && !w.fired) {
            int n = scan(other, "r", 1, "s", 1, out, sizeof out);
            scans++;
            torn += n != (round & 1 ? 100 : 0) && n != (round & 1 ? 0 : 100);
        }
        for (int i = 0; i < 100; i++)       /* the next round deletes them */
            b[i].op = round & 1 ? BACKEND_PUT : BACKEND_DELETE;
    }
    TEST_EQ_INT(torn, 0, "scans during 100-write batches see all of a batch or none");
    printf("# %d scans overlapped the batches\n", scans);
    for (int i = 0; i < 100; i++)
        b[i].op = BACKEND_DELETE;
    kapply(st, b, NULL, 100, 0, &w);
}

/* Two stores (two front ends) race VERSION-conditional writes of one key. */
static void test_race(struct backend_store *a, struct backend_store *b)
{
    unsigned char cur[32], va[32], vb[32];
    struct waiter w, wa, wb;
    int rounds = 40, exact = 0;
    uint64_t ver = 1;
    size_t l = mkval(cur, ver, "start");
    struct backend_write wr = { BACKEND_PUT, "race", 4, cur, l };
    kapply(a, &wr, NULL, 1, 0, &w);
    for (int i = 0; i < rounds; i++) {
        size_t la = mkval(va, ver * 10 + 1, "A"), lb = mkval(vb, ver * 10 + 2, "B");
        struct backend_write wra = { BACKEND_PUT, "race", 4, va, la };
        struct backend_write wrb = { BACKEND_PUT, "race", 4, vb, lb };
        struct backend_cond c = { BACKEND_EXPECT_VERSION, ver };
        w_init(&wa);
        w_init(&wb);
        int ra = backend_postgres_ops.apply_v2(a, &wra, &c, 1, &wa.call);
        int rb = backend_postgres_ops.apply_v2(b, &wrb, &c, 1, &wb.call);
        ra = w_wait(&wa, ra);
        rb = w_wait(&wb, rb);
        if ((ra == BACKEND_OK) + (rb == BACKEND_OK) == 1 &&
            (ra == BACKEND_CONFLICT) + (rb == BACKEND_CONFLICT) == 1)
            exact++;
        else
            printf("# round %d: %d %d\n", i, ra, rb);
        ver = ver * 10 + (ra == BACKEND_OK ? 1 : 2);
    }
    TEST_EQ_INT(exact, rounds, "two stores racing a VERSION write: exactly one wins every round");

    /* insert-if-absent of the same new key, and delete-if-present of the
       same existing key, from both stores at once */
    int ins = 0, del = 0;
    for (int i = 0; i < rounds; i++) {
        char key[16];
        snprintf(key, sizeof key, "race%d", i);
        struct backend_write wra = { BACKEND_PUT, key, strlen(key), "A", 1 };
        struct backend_write wrb = { BACKEND_PUT, key, strlen(key), "B", 1 };
        struct backend_cond c = { BACKEND_EXPECT_ABSENT, 0 };
        w_init(&wa);
        w_init(&wb);
        int ra = backend_postgres_ops.apply_v2(a, &wra, &c, 1, &wa.call);
        int rb = backend_postgres_ops.apply_v2(b, &wrb, &c, 1, &wb.call);
        ra = w_wait(&wa, ra);
        rb = w_wait(&wb, rb);
        ins += (ra == BACKEND_OK) + (rb == BACKEND_OK) == 1 &&
               (ra == BACKEND_CONFLICT) + (rb == BACKEND_CONFLICT) == 1;
        struct backend_write da = { BACKEND_DELETE, key, strlen(key), NULL, 0 };
        c.expect = BACKEND_EXPECT_PRESENT;
        w_init(&wa);
        w_init(&wb);
        wa.call.want_counts = wb.call.want_counts = 1;
        ra = backend_postgres_ops.apply_v2(a, &da, &c, 1, &wa.call);
        rb = backend_postgres_ops.apply_v2(b, &da, &c, 1, &wb.call);
        ra = w_wait(&wa, ra);
        rb = w_wait(&wb, rb);
        del += (ra == BACKEND_OK) + (rb == BACKEND_OK) == 1 &&
               (ra == BACKEND_CONFLICT) + (rb == BACKEND_CONFLICT) == 1 &&
               wa.call.removed + wb.call.removed == 1;
    }
    TEST_EQ_INT(ins, rounds, "two stores racing an insert-if-absent: exactly one wins every round");
    TEST_EQ_INT(del, rounds, "two stores racing a delete-if-present: exactly one wins (and counts it)");
    char out[64];
    kget(a, "race", out, sizeof out);
    kdel(a, "race");
}

/* A cursor is one snapshot while another connection writes. */
static void test_snapshot(struct backend_store *st, struct backend_store *other, PGconn *side)
{
    char k[8], out[64];
    struct waiter w;
    for (int i = 1; i <= 9; i++) {
        snprintf(k, sizeof k, "s%d", i);
        kput(st, k, "old");
    }
    struct backend_iter *it;
    char err[256];
    backend_postgres_ops.iter_open(st, "s", 1, "t", 1, &it, err, sizeof err);
    w_init(&w);
    int rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
    TEST_EQ_INT(rc, 1, "cursor: first step");
    /* behind its back: another store and a plain connection write */
    kdel(other, "s5");
    kput(other, "s55", "new");
    kput(other, "s7", "new");
    side_run(side, "UPDATE tabled_kv SET v = '\\x6e6577' WHERE kp = '\\x7338'");   /* s8 := "new" */
    int n = 1, stale = 1;
    char seen[128] = "s1";
    for (;;) {
        w_init(&w);
        rc = w_wait(&w, backend_postgres_ops.iter_next_v2(it, &w.call));
        if (rc != 1)
            break;
        n++;
        strncat(seen, ",", sizeof seen - strlen(seen) - 1);
        strncat(seen, w.call.key, w.call.key_len < 8 ? w.call.key_len : 7);
        stale &= w.call.val_len == 3 && !memcmp(w.call.val, "old", 3);
    }
    backend_postgres_ops.iter_close(it);
    TEST_EQ_STR(seen, "s1,s2,s3,s4,s5,s6,s7,s8,s9", "the cursor's keys are those of its snapshot");
    TEST_CHECK(rc == 0 && stale, "and its values too (no write made after its first step)");
    scan(st, "s", 1, "t", 1, out, sizeof out);
    TEST_EQ_STR(out, "s1,s2,s3,s4,s55,s6,s7,s8,s9", "a new cursor sees the writes");
    for (int i = 1; i <= 9; i++) {
        snprintf(k, sizeof k, "s%d", i);
        kdel(st, k);
    }
    kdel(st, "s55");
}

/* More calls than connections: they queue and all complete; a cursor
   holding one connection does not stop the others. */
static void test_queue(void)
{
    char err[256] = "";
    struct backend_store *st = open_store("pool-size=2", NULL, err);
    TEST_CHECK(st != NULL, "open with pool-size=2");
    if (!st)
        return;
    kput(st, "q", "v");
    struct waiter w[10];
    int rc[10], ok = 0;
    for (int i = 0; i < 10; i++) {
        w_init(&w[i]);
        rc[i] = backend_postgres_ops.get_v2(st, "q", 1, &w[i].call);
    }
    for (int i = 0; i < 10; i++)
        ok += w_wait(&w[i], rc[i]) == BACKEND_OK && w[i].fired == 1;
    TEST_EQ_INT(ok, 10, "10 gets at once on 2 connections all complete (done called once each)");
    struct backend_iter *it;
    backend_postgres_ops.iter_open(st, "", 0, NULL, 0, &it, err, sizeof err);
    struct waiter s;
    w_init(&s);
    TEST_EQ_INT(w_wait(&s, backend_postgres_ops.iter_next_v2(it, &s.call)), 1, "a cursor holds a connection");
    char out[8];
    TEST_EQ_INT(kget(st, "q", out, sizeof out), BACKEND_OK, "a get runs on the other");
    backend_postgres_ops.iter_close(it);
    kdel(st, "q");
    backend_postgres_ops.close(st);
}

/* Completion order of the multi-gets of test_coalesce. */
static int co_order[20], co_n;

struct co_waiter {
    struct waiter w;
    int id;
};

/* done() of test_coalesce: records the order and copies the values. */
static void co_done(struct backend_call *c)
{
    struct co_waiter *cw = c->arg;
    co_order[co_n++] = cw->id;
    cw->w.fired++;
}

/* Multi-gets queued behind a busy connection go out as one statement
   (pg_coalesce) and each gets its own keys' answers: present and absent
   short keys, long keys sharing their first 2600 bytes (one present, one
   absent), a key named twice. Proof that they rode together: with one
   connection, the first queued op leads the statement and completes after
   its riders (it owns the result they borrow), which a one-by-one queue
   would never do. */
static void test_coalesce(void)
{
    char err[256] = "";
    struct backend_store *st = open_store("pool-size=1", NULL, err);
    TEST_CHECK(st != NULL, "open with pool-size=1");
    if (!st)
        return;
    static unsigned char l1[6000], l2[6000];
    size_t n1 = long_key(6, l1), n2 = long_key(7, l2);  /* same 2600-byte prefix */
    struct backend_write wr[3] = {
        { BACKEND_PUT, "co-a", 4, "va", 2 },
        { BACKEND_PUT, "co-b", 4, "vb", 2 },
        { BACKEND_PUT, l1, n1, "vl1", 3 },
    };
    struct waiter aw;
    TEST_EQ_INT(kapply(st, wr, NULL, 3, 0, &aw), BACKEND_OK, "three keys written");
    enum { N = 20 };
    static struct co_waiter cw[N];
    static struct backend_mget mg[N][3];
    int rc[N];
    co_n = 0;
    for (int i = 0; i < N; i++) {
        memset(&cw[i], 0, sizeof cw[i]);
        cw[i].id = i;
        cw[i].w.call.done = co_done;
        cw[i].w.call.arg = &cw[i];
        switch (i % 4) {
        case 0:     /* present, absent */
            mg[i][0] = (struct backend_mget){ "co-a", 4, 0, NULL, 0 };
            mg[i][1] = (struct backend_mget){ "co-x", 4, 0, NULL, 0 };
            mg[i][2] = (struct backend_mget){ "co-b", 4, 0, NULL, 0 };
            break;
        case 1:     /* long present, long absent with its prefix */
            mg[i][0] = (struct backend_mget){ l1, n1, 0, NULL, 0 };
            mg[i][1] = (struct backend_mget){ l2, n2, 0, NULL, 0 };
            mg[i][2] = (struct backend_mget){ "co-b", 4, 0, NULL, 0 };
            break;
        case 2:     /* all absent */
            mg[i][0] = (struct backend_mget){ "co-y", 4, 0, NULL, 0 };
            mg[i][1] = (struct backend_mget){ l2, n2, 0, NULL, 0 };
            mg[i][2] = (struct backend_mget){ "co-z", 4, 0, NULL, 0 };
            break;
        default:    /* a key twice */
            mg[i][0] = (struct backend_mget){ "co-b", 4, 0, NULL, 0 };
            mg[i][1] = (struct backend_mget){ "co-b", 4, 0, NULL, 0 };
            mg[i][2] = (struct backend_mget){ l1, n1, 0, NULL, 0 };
            break;
        }
        rc[i] = backend_postgres_ops.get_multi_v2(st, mg[i], 3, &cw[i].w.call);
    }
    /* each answer is checked inside the loop's done order: values are
       borrowed only until done() returns, so co_done copies nothing and
       the statuses (kept in mg) are what is checked here */
    int pending = 0;
    for (int i = 0; i < N; i++)
        pending += rc[i] == BACKEND_PENDING;
    TEST_EQ_INT(pending, N, "20 multi-gets pending at once on one connection");
    time_t t0 = time(NULL);
    while (co_n < N && time(NULL) - t0 < 90)
        event_base_loop(base, EVLOOP_ONCE);
    TEST_EQ_INT(co_n, N, "every multi-get completed once");
    int good = 0;
    for (int i = 0; i < N; i++) {
        int ok = cw[i].w.call.status == BACKEND_OK;
        int want[4][3] = {
            { BACKEND_OK, BACKEND_NOTFOUND, BACKEND_OK },
            { BACKEND_OK, BACKEND_NOTFOUND, BACKEND_OK },
            { BACKEND_NOTFOUND, BACKEND_NOTFOUND, BACKEND_NOTFOUND },
            { BACKEND_OK, BACKEND_OK, BACKEND_OK },
        };
        for (int k = 0; k < 3; k++)
            ok &= mg[i][k].status == want[i % 4][k];
        good += ok;
        if (!ok)
            printf("# multi-get %d: %d (%d %d %d)\n", i, cw[i].w.call.status, mg[i][0].status,
                   mg[i][1].status, mg[i][2].status);
    }
    TEST_EQ_INT(good, N, "each multi-get has its own keys' statuses (long keys, absent keys, "
                "a key twice)");
    int pos1 = -1, pos2 = -1;
    for (int i = 0; i < co_n; i++) {
        if (co_order[i] == 1)
            pos1 = i;
        if (co_order[i] == 2)
            pos2 = i;
    }
    TEST_CHECK(co_order[0] == 0 && pos1 > pos2,
               "the queued multi-gets went out together (the first queued one, leading the "
               "statement, completes after the others)");
    kdel(st, "co-a");
    kdel(st, "co-b");
    struct backend_write d = { BACKEND_DELETE, l1, n1, NULL, 0 };
    kapply(st, &d, NULL, 1, 0, &aw);
    backend_postgres_ops.close(st);
}

/* Values of coalesced reads are right, not only the statuses, and a get
   of an absent key leading the statement (its NOTFOUND is its own answer)
   leaves its riders' answers alone: gets and one-key multi-gets queued
   behind a busy connection, each checked inside done() (values are
   borrowed only until it returns). */
static int cv_bad, cv_done;

struct cv_call {
    struct backend_call call;
    struct backend_mget mg[1];
    const char *want;                   /* NULL: absent */
    int get;                            /* get_v2, not get_multi_v2 */
};

static void cv_on_done(struct backend_call *c)
{
    struct cv_call *v = c->arg;
    cv_done++;
    const void *val = v->get ? c->val : v->mg[0].val;
    size_t len = v->get ? c->val_len : v->mg[0].val_len;
    int st = v->get ? c->status : c->status == BACKEND_OK ? v->mg[0].status : c->status;
    int ok = v->want ? st == BACKEND_OK && len == strlen(v->want) && !memcmp(val, v->want, len)
                     : st == BACKEND_NOTFOUND;
    if (!ok) {
        cv_bad++;
        printf("# coalesced read of %s: status %d\n", v->want ? v->want : "(absent)", st);
    }
}

static void test_coalesce_values(void)
{
    char err[256] = "";
    struct backend_store *st = open_store("pool-size=1", NULL, err);
    if (!st) {
        TEST_CHECK(0, "open with pool-size=1");
        return;
    }
    enum { N = 12 };
    static char keys[N][8];
    static struct cv_call calls[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "cv%02d", i);
        if (i != 1)
            kput(st, keys[i], keys[i]);     /* each key's value is its name */
    }
    cv_bad = cv_done = 0;
    for (int i = 0; i < N; i++) {
        /* 0 runs at once; 1, a get of an absent key, leads the rest */
        struct cv_call *v = &calls[i];
        memset(v, 0, sizeof *v);
        v->call.done = cv_on_done;
        v->call.arg = v;
        v->want = i == 1 ? NULL : keys[i];
        v->get = i < 2 || i % 3 == 0;
        v->mg[0] = (struct backend_mget){ keys[i], 4, 0, NULL, 0 };
        int rc = v->get ? backend_postgres_ops.get_v2(st, keys[i], 4, &v->call)
                        : backend_postgres_ops.get_multi_v2(st, v->mg, 1, &v->call);
        TEST_CHECK(rc == BACKEND_PENDING, "a read queued");
    }
    time_t t0 = time(NULL);
    while (cv_done < N && time(NULL) - t0 < 90)
        event_base_loop(base, EVLOOP_ONCE);
    TEST_CHECK(cv_done == N && cv_bad == 0,
               "queued gets and multi-gets each read their own key's value, behind a get "
               "of an absent key that led them");
    for (int i = 0; i < N; i++)
        kdel(st, keys[i]);
    backend_postgres_ops.close(st);
}

/* The hot statements are prepared once per connection, ahead of the first
   op that needs them. A prepare survives the pipeline it came in failing
   (a refused expectation rolls the transaction back, not the session's
   prepared statements), and a new connection (the old one's server
   process ended) prepares again. */
static PGconn *test_prepared(PGconn *side)
{
    char err[256] = "", out[16], ci[700];
    const char *params[3] = { ci, "pool-size=1", NULL };
    struct backend_options o = { 0 };
    struct backend_store *st = NULL;
    snprintf(ci, sizeof ci, "conninfo=%s application_name=tabled_pp", conninfo);
    o.params = params;
    o.host = &host;
    TEST_EQ_INT(backend_postgres_ops.open(&o, &st, err, sizeof err), BACKEND_OK,
                "open with pool-size=1");
    if (!st)
        return side;
    TEST_EQ_INT(kput(st, "pp", "v1"), BACKEND_OK, "a put (its statement prepared)");
    const char *mine = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tabled_pp'";
    TEST_CHECK(system(stop_script) == 0 && system(start_script) == 0,
               "database restarted (the store's connection is gone)");
    PQfinish(side);
    side = PQconnectdb(conninfo);
    /* the first op on the new connection: an insert whose expectation
       fails, in the pipeline that prepares its statement */
    struct waiter w;
    struct backend_write wr = { BACKEND_PUT, "pp", 2, "v2", 2 };
    struct backend_cond absent = { BACKEND_EXPECT_ABSENT, 0 };
    TEST_EQ_INT(kapply(st, &wr, &absent, 1, 0, &w), BACKEND_CONFLICT,
                "an insert of an existing key, first op on a new connection: CONFLICT");
    TEST_EQ_INT(kapply(st, &wr, &absent, 1, 0, &w), BACKEND_CONFLICT,
                "the same insert again (its statement stayed prepared)");
    struct backend_write wr2 = { BACKEND_PUT, "pp2", 3, "v3", 2 };
    TEST_EQ_INT(kapply(st, &wr2, &absent, 1, 0, &w), BACKEND_OK, "an insert of a new key");
    TEST_CHECK(kget(st, "pp2", out, sizeof out) == BACKEND_OK && !strcmp(out, "v3"),
               "it reads back");
    PGresult *r = side_exec(side, mine);
    TEST_CHECK(r && PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "1"),
               "all of it on one new connection");
    PQclear(r);
    kdel(st, "pp");
    kdel(st, "pp2");
    backend_postgres_ops.close(st);
    return side;
}

/* A conninfo naming a dead host first: libpq moves to the next one, on the
   synchronous first connection and on the pool's asynchronous ones. */
static void test_multihost(void)
{
    PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
    const char *h = NULL, *p = NULL, *u = NULL, *d = NULL;
    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        if (!o->val)
            continue;
        if (!strcmp(o->keyword, "host"))
            h = o->val;
        else if (!strcmp(o->keyword, "port"))
            p = o->val;
        else if (!strcmp(o->keyword, "user"))
            u = o->val;
        else if (!strcmp(o->keyword, "dbname"))
            d = o->val;
    }
    char ci[700], param[720], err[256] = "";
    snprintf(ci, sizeof ci, "host=/nonexistent-tabled,%s port=%s,%s user=%s dbname=%s",
             h ? h : "", p ? p : "", p ? p : "", u ? u : "", d ? d : "");
    snprintf(param, sizeof param, "conninfo=%s", ci);
    PQconninfoFree(opts);
    const char *params[] = { param, "pool-size=3", NULL };
    struct backend_options o = { 0 };
    struct backend_store *st = NULL;
    o.params = params;
    o.host = &host;
    TEST_EQ_INT(backend_postgres_ops.open(&o, &st, err, sizeof err), BACKEND_OK,
                "open with a dead host listed first");
    if (!st)
        return;
    struct waiter w[3];
    int rc[3], ok = 0;
    for (int i = 0; i < 3; i++) {
        w_init(&w[i]);
        rc[i] = backend_postgres_ops.get_v2(st, "x", 1, &w[i].call);
    }
    time_t t0 = time(NULL);
    for (int i = 0; i < 3; i++)
        ok += w_wait(&w[i], rc[i]) == BACKEND_NOTFOUND;
    TEST_EQ_INT(ok, 3, "three gets at once (two new connections past the dead host)");
    TEST_CHECK(time(NULL) - t0 <= 2, "at once (no connection attempt waited for its timeout)");
    int conns = 0;
    for (int i = 0; i < 3; i++)             /* three held cursors need three connections */
        w_init(&w[i]);
    struct backend_iter *it[3];
    for (int i = 0; i < 3; i++) {
        backend_postgres_ops.iter_open(st, "", 0, NULL, 0, &it[i], err, sizeof err);
        rc[i] = backend_postgres_ops.iter_next_v2(it[i], &w[i].call);
    }
    for (int i = 0; i < 3; i++)
        conns += w_wait(&w[i], rc[i]) >= 0;
    for (int i = 0; i < 3; i++)
        backend_postgres_ops.iter_close(it[i]);
    TEST_EQ_INT(conns, 3, "three cursors at once: the pool grew to 3 connections");
    TEST_CHECK(time(NULL) - t0 <= 2, "promptly");
    backend_postgres_ops.close(st);
}

/* A statement stuck behind a row lock: the per-call timeout fails the
   apply with UNKNOWN (its writes were sent), and the store serves on. */
static void test_timeout(PGconn *side)
{
    char err[256] = "", out[8];
    struct backend_store *st = open_store("timeout=1", "pool-size=2", err);
    TEST_CHECK(st != NULL, "open with timeout=1");
    if (!st)
        return;
    kput(st, "lock", "v");
    side_run(side, "BEGIN");
    side_run(side, "SELECT * FROM tabled_kv WHERE kp = '\\x6c6f636b' FOR UPDATE");
    struct waiter w;
    struct backend_write wr = { BACKEND_PUT, "lock", 4, "w", 1 };
    time_t t0 = time(NULL);
    TEST_EQ_INT(kapply(st, &wr, NULL, 1, 0, &w), BACKEND_UNKNOWN, "an apply stuck for the timeout: UNKNOWN");
    TEST_CHECK(time(NULL) - t0 <= 3, "after about the timeout");
    side_run(side, "ROLLBACK");
    TEST_EQ_INT(kget(st, "lock", out, sizeof out), BACKEND_OK, "the store serves on");
    kdel(st, "lock");
    backend_postgres_ops.close(st);
}

/* close() from inside done() is safe. */
static struct backend_store *close_me;
/* done() that closes the store. */
static void close_in_done(struct backend_call *c)
{
    int *fired = c->arg;
    (*fired)++;
    backend_postgres_ops.close(close_me);
}

/* close() called from inside done(). */
static void test_close_in_done(void)
{
    char err[256];
    close_me = open_store(NULL, NULL, err);
    if (!close_me)
        return;
    struct backend_call c = { 0 };
    int fired = 0;
    c.done = close_in_done;
    c.arg = &fired;
    int rc = backend_postgres_ops.get_v2(close_me, "x", 1, &c);
    while (rc == BACKEND_PENDING && !fired)
        event_base_loop(base, EVLOOP_ONCE);
    TEST_CHECK(rc != BACKEND_PENDING || fired == 1, "close() inside done() (checked by the sanitizers)");
    if (rc != BACKEND_PENDING)
        backend_postgres_ops.close(close_me);
}

/* A deadlock (SQLSTATE 40P01) is retried: the store's batch takes dx and
   waits for dy, held by the side connection, which then asks for dx. The
   store's backend waited longer, so the server's deadlock check runs there
   and aborts the batch; the backend sends it again, and it succeeds once
   the side commits. */
static void test_deadlock_retry(struct backend_store *a, PGconn *side)
{
    struct waiter wa;
    char x[8] = "", y[8] = "";
    kput(a, "dx", "0");
    kput(a, "dy", "0");
    side_run(side, "BEGIN");
    side_run(side, "SELECT * FROM tabled_kv WHERE kp = '\\x6479' FOR UPDATE");
    struct backend_write ab[2] = { { BACKEND_PUT, "dx", 2, "a", 1 }, { BACKEND_PUT, "dy", 2, "a", 1 } };
    w_init(&wa);
    int ra = backend_postgres_ops.apply_v2(a, ab, NULL, 2, &wa.call);
    for (int i = 0; i < 30; i++) {          /* the batch holds dx, waits for dy */
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    PGresult *r = side_exec(side, "UPDATE tabled_kv SET v = '\\x73' WHERE kp = '\\x6478'");
    TEST_CHECK(PQresultStatus(r) == PGRES_COMMAND_OK, "the side's write won the deadlock");
    PQclear(r);
    side_run(side, "COMMIT");
    ra = w_wait(&wa, ra);
    TEST_EQ_INT(ra, BACKEND_OK, "the batch aborted by the deadlock was retried and succeeded");
    kget(a, "dx", x, sizeof x);
    kget(a, "dy", y, sizeof y);
    TEST_CHECK(!strcmp(x, "a") && !strcmp(y, "a"), "its writes came after the side's");
    sleep(1);
    side_run(side, "SELECT pg_stat_clear_snapshot()");
    r = side_exec(side, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()");
    TEST_CHECK(PQntuples(r) == 1 && atoi(PQgetvalue(r, 0, 0)) >= 1, "(the server did report a deadlock)");
    PQclear(r);
    kdel(a, "dx");
    kdel(a, "dy");
}

/* get_v2 of a big value, compared inside done (it is borrowed). */
struct bigwait {
    struct backend_call call;
    const unsigned char *expect;
    size_t n;
    int fired, same;
};

/* done() of test_big: compares the borrowed value. */
static void big_done(struct backend_call *c)
{
    struct bigwait *b = c->arg;
    b->fired = 1;
    b->same = c->status == BACKEND_OK && c->val_len == b->n && !memcmp(c->val, b->expect, b->n);
}

/* Values of 1 MiB and 8 MiB (the limit): libpq's output is flushed as the
   socket allows (the write watch), and the bytes come back the same. */
static void test_big(struct backend_store *st)
{
    size_t sizes[2] = { 1u << 20, 8u << 20 };
    for (int s = 0; s < 2; s++) {
        unsigned char *v = malloc(sizes[s]);
        for (size_t i = 0; i < sizes[s]; i++)
            v[i] = (unsigned char)(i * 7 + (i >> 13));
        struct waiter w;
        struct backend_write wr = { BACKEND_PUT, "big", 3, v, sizes[s] };
        TEST_EQ_INT(kapply(st, &wr, NULL, 1, 0, &w), BACKEND_OK, s ? "put of 8 MiB" : "put of 1 MiB");
        struct bigwait b = { { 0 }, v, sizes[s], 0, 0 };
        b.call.done = big_done;
        b.call.arg = &b;
        int rc = backend_postgres_ops.get_v2(st, "big", 3, &b.call);
        while (rc == BACKEND_PENDING && !b.fired)
            event_base_loop(base, EVLOOP_ONCE);
        TEST_CHECK(rc == BACKEND_PENDING && b.same, "the big value reads back the same");
        free(v);
    }
    kdel(st, "big");
}

/* The database stops under a pending write, then comes back. */
static void test_outage(struct backend_store *st, PGconn **side)
{
    char out[16];
    struct waiter w;
    kput(st, "held", "v");
    side_run(*side, "BEGIN");
    side_run(*side, "SELECT * FROM tabled_kv WHERE kp = '\\x68656c64' FOR UPDATE");
    struct backend_write wr = { BACKEND_PUT, "held", 4, "new", 3 };
    w_init(&w);
    int rc = backend_postgres_ops.apply_v2(st, &wr, NULL, 1, &w.call);
    TEST_EQ_INT(rc, BACKEND_PENDING, "an apply waits behind a row lock");
    for (int i = 0; i < 20; i++) {          /* let it reach the server */
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    for (int i = 1; i <= 5; i++) {
        char k[4] = { 'z', (char)('0' + i), 0, 0 };
        kput(st, k, "v");
    }
    struct backend_iter *it;
    char err[256];
    struct waiter ws;
    backend_postgres_ops.iter_open(st, "z", 1, NULL, 0, &it, err, sizeof err);
    w_init(&ws);
    TEST_EQ_INT(w_wait(&ws, backend_postgres_ops.iter_next_v2(it, &ws.call)), 1,
                "a cursor's first step (it holds its connection)");
    TEST_EQ_INT(system(stop_script), 0, "database stopped");
    int crc;
    do {
        w_init(&ws);
        crc = w_wait(&ws, backend_postgres_ops.iter_next_v2(it, &ws.call));
    } while (crc == 1);
    TEST_EQ_INT(crc, BACKEND_UNAVAILABLE, "the cursor's next fetch: UNAVAILABLE (its snapshot is gone)");
    w_init(&ws);
    TEST_EQ_INT(backend_postgres_ops.iter_next_v2(it, &ws.call), BACKEND_UNAVAILABLE,
                "and it keeps saying so");
    backend_postgres_ops.iter_close(it);
    rc = w_wait(&w, rc);
    TEST_EQ_INT(rc, BACKEND_UNKNOWN, "the pending apply: UNKNOWN (writes were sent)");
    printf("# %s\n", w.call.err);
    rc = kget(st, "held", out, sizeof out);
    TEST_EQ_INT(rc, BACKEND_UNAVAILABLE, "a get while the database is down: UNAVAILABLE");
    struct backend_mget mg[2] = { { "held", 4, 0, NULL, 0 }, { "nope", 4, 0, NULL, 0 } };
    w_init(&ws);
    TEST_EQ_INT(w_wait(&ws, backend_postgres_ops.get_multi_v2(st, mg, 2, &ws.call)),
                BACKEND_UNAVAILABLE, "a multi-get while the database is down: UNAVAILABLE");
    rc = kput(st, "other", "v");
    TEST_EQ_INT(rc, BACKEND_UNAVAILABLE, "a put while the database is down: UNAVAILABLE");
    w_init(&w);
    TEST_EQ_INT(backend_postgres_ops.apply_v2(st, NULL, NULL, 0, &w.call), BACKEND_UNAVAILABLE,
                "the probe (apply of nothing) says UNAVAILABLE");
    TEST_EQ_INT(system(start_script), 0, "database started again");
    time_t t0 = time(NULL);
    do {
        struct timeval tv = { 0, 200000 };
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
        rc = kget(st, "held", out, sizeof out);
    } while (rc == BACKEND_UNAVAILABLE && time(NULL) - t0 < 20);
    TEST_EQ_INT(rc, BACKEND_OK, "the store reconnects and serves again");
    printf("# recovered after %ld s\n", (long)(time(NULL) - t0));
    TEST_EQ_STR(out, "v", "the interrupted write was not applied (it never committed)");
    TEST_EQ_INT(kput(st, "held", "after"), BACKEND_OK, "writes work again");
    for (int i = 1; i <= 5; i++) {
        char k[4] = { 'z', (char)('0' + i), 0, 0 };
        kdel(st, k);
    }

    /* a restart while the store is idle: the first read moves to a new
       connection and succeeds; so does a new cursor's first step */
    for (int i = 0; i < 3; i++)             /* several idle connections */
        kget(st, "held", out, sizeof out);
    TEST_CHECK(system(stop_script) == 0 && system(start_script) == 0, "database restarted");
    TEST_EQ_INT(kget(st, "held", out, sizeof out), BACKEND_OK, "the first get after the restart succeeds");
    for (int i = 0; i < 3; i++)
        kget(st, "held", out, sizeof out);
    TEST_CHECK(system(stop_script) == 0 && system(start_script) == 0, "database restarted");
    w_init(&ws);
    TEST_CHECK(w_wait(&ws, backend_postgres_ops.get_multi_v2(st, mg, 2, &ws.call)) == BACKEND_OK &&
                   mg[0].status == BACKEND_OK && mg[1].status == BACKEND_NOTFOUND,
               "the first multi-get after the restart succeeds");
    TEST_CHECK(system(stop_script) == 0 && system(start_script) == 0, "database restarted again");
    TEST_EQ_INT(scan(st, "held", 4, "hele", 4, out, sizeof out), 1,
                "the first scan after the restart succeeds");
    for (int i = 0; i < 3; i++)
        kget(st, "held", out, sizeof out);
    TEST_CHECK(system(stop_script) == 0 && system(start_script) == 0, "database restarted a third time");
    TEST_EQ_INT(kput(st, "held", "third"), BACKEND_OK,
                "the first put after the restart succeeds (dead idle connections are not used)");
    kdel(st, "held");
    PQfinish(*side);
    *side = PQconnectdb(conninfo);
}

/* Runs every test against the database named by argv[1]. */
int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CONNINFO STOP-SCRIPT START-SCRIPT\n", argv[0]);
        return 2;
    }
    conninfo = argv[1];
    stop_script = argv[2];
    start_script = argv[3];
    base = event_base_new();
    char err[256] = "";
    test_open();
    PGconn *side = PQconnectdb(conninfo);
    TEST_CHECK(PQstatus(side) == CONNECTION_OK, "side connection");
    test_migrate();
    struct backend_store *st = open_store("batch-rows=3", NULL, err);
    TEST_CHECK(st != NULL, "open creates the schema");
    if (!st) {
        printf("# %s\n", err);
        return test_done();
    }
    struct backend_store *st2 = open_store("pool-size=1", NULL, err);
    TEST_CHECK(st2 != NULL, "a second store (front end) on the same database");
    side_run(side, "DELETE FROM tabled_kv");
    test_schema(side);
    test_basic(st);
    test_order(st);
    test_long_keys(st);
    test_long_random(st);
    test_order_random(st);
    test_conditions(st);
    test_counts(st);
    test_placeholders(st);
    test_batch100(st, side);
    if (st2) {
        test_race(st, st2);
        test_batch_readers(st, st2);
        test_snapshot(st, st2, side);
        test_deadlock_retry(st, side);
    }
    test_big(st);
    test_queue();
    test_coalesce();
    test_coalesce_values();
    side = test_prepared(side);
    test_multihost();
    test_timeout(side);
    test_close_in_done();
    test_outage(st, &side);
    backend_postgres_ops.close(st);
    if (st2)
        backend_postgres_ops.close(st2);
    PQfinish(side);
    event_base_free(base);
    return test_done();
}
