/* pg_sql.c - what the postgres backend sends and how it reads the
 * answers: the statements of an apply (all checks, then all writes), a
 * cursor's batch query, a get, a multi-get, the pipeline sync; results turned into
 * statuses, counts and buffered rows; the schema created and checked at
 * open. See postgres.c for the design. */
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/bkey.h"
#include "backends/pg.h"
#include "backends/postgres.h"

/* ---- keys ---- */

/* Splits key into kp, kr and kh (see struct pg_key). Comparing (kp, kr)
   column by column is comparing the whole keys bytewise: prefixes that
   differ decide as the keys would (a shorter kp is a whole key, ordered
   before the longer keys it begins); equal prefixes of PG_KEY_PREFIX
   bytes leave the rest to decide. (kp, kh) is unique: a short key is its
   kp, and long keys with one kp differ in their digest (two keys of one
   SHA-256, a collision nobody has found, would share a row). */
void pg_key_split(const void *key, size_t len, struct pg_key *k)
{
    size_t p = len < PG_KEY_PREFIX ? len : PG_KEY_PREFIX;
    k->kp = len ? key : "";
    k->kp_len = (int)p;
    k->kr = len > p ? (const char *)key + p : "";
    k->kr_len = (int)(len - p);
    k->kh = "";
    k->kh_len = 0;
    if (len > PG_KEY_PREFIX) {
        SHA256(key, len, k->hash);
        k->kh = (const char *)k->hash;
        k->kh_len = PG_KEY_HASH;
    }
}

/* ---- sending ---- */

/* Sends one query with binary parameters and results. */
static int pg_query(struct pg_conn *c, struct pg_op *op, const char *sql, int n,
                    const Oid *types, const char *const *vals, const int *lens)
{
    static const int fmts[5] = { 1, 1, 1, 1, 1 };
    if (!PQsendQueryParams(c->pg, sql, n, types, vals, lens, fmts, 1))
        return -1;
    op->nq++;
    return 0;
}

/* The 8-byte big-endian (binary int8) form of a value's version. */
static void pg_ver(const struct backend_write *w, unsigned char out[8])
{
    uint64_t v = w->op == BACKEND_PUT ? backend_value_version(w->val, w->val_len) : 0;
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

/* The hot statements, sent prepared: parsed and planned once per
 * connection (PQsendPrepare, in the pipeline of the first op that needs
 * it), then only executed (PQsendQueryPrepared). Unnamed statements
 * (PQsendQueryParams) are parsed, analysed and planned at every call,
 * which was most of the database's CPU for a point read or a single
 * write (doc/performance.md). Indexed by enum pg_prep; the name is "t"
 * and the index. Parameters: $1 kp, $2 kh (a row is found by "kp = $1 AND
 * kh = $2", the primary key), then $3 kr, $4 v, $5 ver for an insert, or
 * $3 ver for a version check; a multi-get has one bytea[] parameter. */
static const struct {
    const char *sql;
    int nparams;
} pg_prep_sql[PP_COUNT] = {
    [PP_MGET] = {"SELECT kp || kr, v FROM tabled_kv WHERE kp = ANY ($1)", -1},
    [PP_CHECK_ABSENT] = {"WITH i AS (INSERT INTO tabled_kv (kp, kh, kr, v, ver) "
                         "VALUES ($1, $2, $3, '', 0) ON CONFLICT (kp, kh) DO NOTHING "
                         "RETURNING 1) SELECT 1 / count(*) FROM i", 3},
    [PP_INSERT_ABSENT] = {"WITH i AS (INSERT INTO tabled_kv (kp, kh, kr, v, ver) "
                          "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (kp, kh) DO NOTHING "
                          "RETURNING 1) SELECT 1 / count(*) FROM i", 5},
    [PP_CHECK_PRESENT] = {"SELECT 1 / count(*) FROM (SELECT 1 FROM tabled_kv WHERE kp = $1 "
                          "AND kh = $2 FOR UPDATE) s", 2},
    [PP_CHECK_VERSION] = {"SELECT 1 / count(*) FROM (SELECT 1 FROM tabled_kv WHERE kp = $1 "
                          "AND kh = $2 AND ver = $3 FOR UPDATE) s", -3},
    [PP_FAIL] = {"SELECT 1 / count(*) FROM tabled_kv WHERE false", 0},
    [PP_EXISTS] = {"SELECT count(*) FROM (SELECT 1 FROM tabled_kv WHERE kp = $1 "
                   "AND kh = $2 FOR UPDATE) s", 2},
    [PP_UPSERT] = {"INSERT INTO tabled_kv (kp, kh, kr, v, ver) VALUES ($1, $2, $3, $4, $5) "
                   "ON CONFLICT (kp, kh) DO UPDATE SET v = excluded.v, ver = excluded.ver", 5},
    [PP_DELETE] = {"DELETE FROM tabled_kv WHERE kp = $1 AND kh = $2", 2},
    [PP_INSERT_ONLY] = {"INSERT INTO tabled_kv (kp, kh, kr, v, ver) VALUES ($1, $2, $3, $4, $5) "
                        "ON CONFLICT (kp, kh) DO NOTHING", 5},
};

/* The parameter types of prepared statement i (its count in *n): bytea
   ($1 kp, $2 kh, $3 kr, $4 v), int8 for the version ($5, or $3 of a
   version check: nparams -3), bytea[] for the multi-get (nparams -1). */
static const Oid *pg_prep_types(int i, int *n)
{
    static const Oid kvv[5] = { PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_BYTEA,
                                PG_OID_INT8 };
    static const Oid kver[3] = { PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_INT8 };
    static const Oid arr[1] = { PG_OID_BYTEA_ARRAY };
    int np = pg_prep_sql[i].nparams;
    *n = np < 0 ? -np : np;
    return np == -1 ? arr : np == -3 ? kver : kvv;
}

/* The statement name of prepared statement i ("t0".."t9"). */
static const char *pg_prep_name(int i)
{
    static const char *const names[PP_COUNT] = { "t0", "t1", "t2", "t3", "t4",
                                                 "t5", "t6", "t7", "t8", "t9" };
    return names[i];
}

/* Sends one prepared statement's execution with binary parameters and
   results. */
static int pg_exec_prep(struct pg_conn *c, struct pg_op *op, enum pg_prep i,
                        const char *const *vals, const int *lens)
{
    static const int fmts[5] = { 1, 1, 1, 1, 1 };
    int n;
    pg_prep_types((int)i, &n);
    if (!PQsendQueryPrepared(c->pg, pg_prep_name((int)i), n, vals, lens, fmts, 1))
        return -1;
    op->nq++;
    return 0;
}

/* The prepared statement an apply's statement kind runs. */
static enum pg_prep pg_stmt_prep(enum pg_stmt_kind k)
{
    switch (k) {
    case ST_CHECK_ABSENT: return PP_CHECK_ABSENT;
    case ST_INSERT_ABSENT: return PP_INSERT_ABSENT;
    case ST_CHECK_PRESENT: return PP_CHECK_PRESENT;
    case ST_CHECK_VERSION: return PP_CHECK_VERSION;
    case ST_FAIL: return PP_FAIL;
    case ST_EXISTS: return PP_EXISTS;
    case ST_UPSERT: return PP_UPSERT;
    case ST_DELETE: return PP_DELETE;
    case ST_INSERT_ONLY: return PP_INSERT_ONLY;
    }
    return PP_FAIL;
}

/* Sends the prepares op needs that connection c has not had yet, ahead
   of op's queries in the same pipeline (op->skip counts their results).
   A prepare is kept by the session whatever the pipeline's transaction
   does, so a bit once set stays true until the connection is dropped
   (pg_conn_drop clears them: a new connection has none). */
static int pg_prepare(struct pg_conn *c, struct pg_op *op)
{
    unsigned need = 0;
    if (op->kind == OP_MGET)
        need = 1u << PP_MGET;
    else if (op->kind == OP_APPLY)
        for (size_t i = 0; i < op->nstmts; i++)
            need |= 1u << pg_stmt_prep(op->stmts[i].kind);
    need &= ~c->prepared;
    for (int i = 0; i < PP_COUNT; i++) {
        if (!(need & (1u << i)))
            continue;
        int n;
        const Oid *types = pg_prep_types(i, &n);
        if (!PQsendPrepare(c->pg, pg_prep_name(i), pg_prep_sql[i].sql, n, types))
            return -1;
        c->prepared |= 1u << i;
        op->skip++;
    }
    return 0;
}

void pg_prep_result(struct pg_conn *c, struct pg_op *op, PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK) {
        c->prep_failed = 1;
        if (op->status == BACKEND_OK && s != PGRES_PIPELINE_ABORTED) {
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            char m[160];
            op->status = BACKEND_IOERR;
            snprintf(op->err, sizeof op->err, "database error %s: %s", state ? state : "",
                     pg_msg(PQresultErrorMessage(r), m, sizeof m));
        }
    }
    PQclear(r);
}

/* Sends one statement of an apply's plan (see pg_prep_sql for its
   parameters). */
static int pg_send_stmt(struct pg_conn *c, struct pg_op *op, const struct pg_stmt *s)
{
    const struct backend_write *w = &op->w[s->w];
    struct pg_key k;
    unsigned char ver[8];
    pg_key_split(w->key, w->key_len, &k);
    const char *vals[5] = { k.kp, k.kh, k.kr, w->op == BACKEND_PUT && w->val ? w->val : "",
                            (const char *)ver };
    int lens[5] = { k.kp_len, k.kh_len, k.kr_len, w->op == BACKEND_PUT ? (int)w->val_len : 0, 8 };
    pg_ver(w, ver);
    if (s->kind == ST_CHECK_VERSION) {
        uint64_t v = op->cond[s->w].version;
        for (int i = 7; i >= 0; i--, v >>= 8)
            ver[i] = (unsigned char)v;
        const char *cv[3] = { vals[0], vals[1], (const char *)ver };
        int cl[3] = { lens[0], lens[1], 8 };
        return pg_exec_prep(c, op, PP_CHECK_VERSION, cv, cl);
    }
    return pg_exec_prep(c, op, pg_stmt_prep(s->kind), vals, lens);
}

/* Sends a cursor's next batch query (after BEGIN on a fresh connection). */
static int pg_send_step(struct pg_conn *c, struct pg_op *op)
{
    static const Oid types[4] = { PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_BYTEA };
    struct backend_iter *it = op->it;
    char sql[320];
    if (!it->conn) {
        if (!PQsendQueryParams(c->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL, NULL,
                               NULL, NULL, 0))
            return -1;
        op->nq++;
        op->fresh = 1;
        it->conn = c;
        c->holder = it;
    }
    /* The end bound as "k < ANY (ARRAY[$2])" (the same condition, still an
       index bound): on a table without statistics (before its first
       ANALYZE) "k > $1 AND k < $2" is estimated as a tiny range (0.5% of
       the rows), and PostgreSQL then picks a bitmap scan of the whole range
       and a sort over the index scan that stops after LIMIT rows (19 ms
       against 0.3 ms a page on 20000 rows). The ANY form is estimated as
       an independent inequality, which keeps the ordered index scan; no
       planner settings are needed (other engines lack them).
       Keys are (kp, kr) (see pg_key_split), and "(kp, kr) > ($1, $2)" is
       the whole key's order. A bound that is itself a short key (kp alone,
       as every bound of the service's keys under 2600 bytes is) needs only
       kp: "key >= b" is "kp >= b" and "key < b" is "kp < b" for a b of at
       most PG_KEY_PREFIX bytes, and "key > b" is "kp > b" for a shorter b
       (a key whose kp is b is then b itself). Other bounds add the row
       comparison as a filter beside the kp bound of the index scan (a key
       above the position has a prefix at least the position's, and one
       below the end a prefix at most the end's). ORDER BY kp, kr is an
       incremental sort over the index order of kp, which sorts only keys
       sharing their first PG_KEY_PREFIX bytes (measured: 20% more database
       CPU than the single-column key's plain index scan for a page of
       1000 rows of 200 bytes, 1.09 against 0.91 ms). */
    struct pg_key p, e;
    const char *vals[4];
    int lens[4], n = 0;
    char lo[80], hi[96] = "";
    const char *op_ = it->pos_incl ? ">=" : ">";
    pg_key_split(it->pos, it->pos_len, &p);
    vals[n] = p.kp;
    lens[n++] = p.kp_len;
    if (it->pos_len < PG_KEY_PREFIX || (it->pos_incl && it->pos_len == PG_KEY_PREFIX)) {
        snprintf(lo, sizeof lo, "kp %s $1", op_);
    } else {
        vals[n] = p.kr;
        lens[n++] = p.kr_len;
        snprintf(lo, sizeof lo, "kp >= $1 AND (kp, kr) %s ($1, $2)", op_);
    }
    if (it->end) {
        int b = n + 1;
        pg_key_split(it->end, it->end_len, &e);
        vals[n] = e.kp;
        lens[n++] = e.kp_len;
        if (it->end_len <= PG_KEY_PREFIX) {
            snprintf(hi, sizeof hi, " AND kp < ANY (ARRAY[$%d])", b);
        } else {
            vals[n] = e.kr;
            lens[n++] = e.kr_len;
            snprintf(hi, sizeof hi, " AND kp <= ANY (ARRAY[$%d]) AND (kp, kr) < ($%d, $%d)", b,
                     b, b + 1);
        }
    }
    snprintf(sql, sizeof sql, "SELECT kp || kr, v FROM tabled_kv WHERE %s%s ORDER BY kp, kr "
             "LIMIT %u", lo, hi, it->st->batch_rows);
    return pg_query(c, op, sql, n, types, vals, lens);
}

/* Puts a big-endian 32-bit number. */
static unsigned char *pg_put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
    return p + 4;
}

/* The length of a get_multi key's kp column: its first PG_KEY_PREFIX
   bytes. */
static size_t pg_mget_kp_len(const struct backend_mget *m)
{
    return m->key_len < PG_KEY_PREFIX ? m->key_len : PG_KEY_PREFIX;
}

/* Sends a get_multi's one query: the keys as one bytea[] parameter in
   the binary array format (dimensions 1, no nulls, element type bytea,
   n elements from index 1, then each element's kp: its first
   PG_KEY_PREFIX bytes), and "kp = ANY ($1)", an index lookup per key in
   one statement. The rows carry their whole keys (kp || kr), so a longer
   key that merely shares a named key's prefix is told apart by
   pg_mget_answer. The keys of the op's riders (pg_coalesce) go in the
   same array. */
static int pg_send_mget(struct pg_conn *c, struct pg_op *op)
{
    size_t len = 20, n = 0;
    for (struct pg_op *o = op; o; o = o == op ? op->riders : o->rnext) {
        n += o->nmget;
        for (size_t i = 0; i < o->nmget; i++)
            len += 4 + pg_mget_kp_len(&o->mget[i]);
    }
    if (len > 0x7fffffff || n > 0x7fffffff)
        return -1;
    unsigned char *buf = malloc(len), *p = buf;
    if (!buf)
        return -1;
    p = pg_put32(p, 1);
    p = pg_put32(p, 0);
    p = pg_put32(p, PG_OID_BYTEA);
    p = pg_put32(p, (uint32_t)n);
    p = pg_put32(p, 1);
    for (struct pg_op *o = op; o; o = o == op ? op->riders : o->rnext)
        for (size_t i = 0; i < o->nmget; i++) {
            size_t kl = pg_mget_kp_len(&o->mget[i]);
            p = pg_put32(p, (uint32_t)kl);
            memcpy(p, o->mget[i].key, kl);
            p += kl;
        }
    const char *vals[1] = { (const char *)buf };
    int lens[1] = { (int)len };
    int rc = pg_exec_prep(c, op, PP_MGET, vals, lens);
    free(buf);                          /* libpq has copied it */
    return rc;
}

/* Sends op's queries (after the prepares they need) on connection c;
   0, or -1 when libpq refused one. */
static int pg_send_queries(struct pg_conn *c, struct pg_op *op)
{
    int rc = 0;
    if (pg_prepare(c, op) < 0)
        return -1;
    switch (op->kind) {
    case OP_MGET:
        PQclear(op->res);               /* an earlier attempt's */
        op->res = NULL;
        rc = pg_send_mget(c, op);
        break;
    case OP_STEP:
        rc = pg_send_step(c, op);
        break;
    case OP_APPLY:
        for (size_t i = 0; i < op->nstmts && rc == 0; i++)
            rc = pg_send_stmt(c, op, &op->stmts[i]);
        break;
    case OP_ROLLBACK:
        rc = PQsendQueryParams(c->pg, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0) ? 0 : -1;
        op->nq++;
        break;
    }
    return rc;
}

/* Sends an op's queries and the pipeline sync on connection c (idle, or
   held by the op's cursor). Returns 0, or a failure status with op->err
   set (the connection is then dropped). */
int pg_send(struct pg_conn *c, struct pg_op *op)
{
    struct backend_store *st = c->st;
    op->nq = op->qi = 0;
    op->seen = op->sent = op->retry = op->fresh = 0;
    op->status = BACKEND_OK;
    op->created = op->removed = op->failed = 0;
    op->skip = 0;
    int rc = pg_send_queries(c, op);
    int fl = -1;
    if (rc == 0 && PQpipelineSync(c->pg)) {
        op->sent = 1;                   /* from now on it may commit */
        fl = PQflush(c->pg);
    }
    if (fl >= 0 && pg_watch(c, fl ? BACKEND_FD_READ | BACKEND_FD_WRITE : BACKEND_FD_READ) == 0) {
        c->state = PGC_BUSY;
        c->op = op;
        op->conn = c;
        return 0;
    }
    char m[160];
    pg_msg(PQerrorMessage(c->pg), m, sizeof m);
    int status = op->kind == OP_APPLY && op->sent ? BACKEND_UNKNOWN : BACKEND_UNAVAILABLE;
    snprintf(op->err, sizeof op->err, "sending to the database failed%s: %s",
             status == BACKEND_UNKNOWN ? " (outcome unknown)" : "", m);
    struct backend_iter *it = c->holder;
    pg_conn_drop(c);
    if (it && it != op->it) {           /* cannot happen: held conns run their cursor's ops */
        it->conn = NULL;
        it->broken = BACKEND_UNAVAILABLE;
    }
    if (op->kind == OP_STEP) {
        op->it->conn = NULL;
        op->it->broken = status;
        snprintf(op->it->err, sizeof op->it->err, "%s", op->err);
    }
    pg_kick(st);
    return status;
}

/* ---- results ---- */

/* True for statements whose 22012 means "expectation failed". */
static int pg_is_check(enum pg_stmt_kind k)
{
    return k == ST_CHECK_ABSENT || k == ST_INSERT_ABSENT || k == ST_CHECK_PRESENT ||
           k == ST_CHECK_VERSION || k == ST_FAIL;
}

/* Reads an int8 column in binary format. */
static uint64_t pg_int8(const PGresult *r, int row, int col)
{
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    uint64_t v = 0;
    if (PQgetlength(r, row, col) != 8)
        return 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Records a failed query of op (the first failure wins). */
static void pg_result_error(struct pg_op *op, const PGresult *r)
{
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    char m[160];
    pg_msg(PQresultErrorMessage(r), m, sizeof m);
    if (!state)
        state = "";
    if (op->status != BACKEND_OK)
        return;
    if (op->kind == OP_APPLY && !strcmp(state, "22012") && op->qi < op->nstmts &&
        pg_is_check(op->stmts[op->qi].kind)) {
        op->status = BACKEND_CONFLICT;
        op->failed = op->stmts[op->qi].w;
        snprintf(op->err, sizeof op->err, "expectation of write %zu failed", op->failed);
        return;
    }
    op->retry = !strcmp(state, "40001") || !strcmp(state, "40P01");
    op->status = !strcmp(state, "53100") ? BACKEND_FULL : BACKEND_IOERR;
    snprintf(op->err, sizeof op->err, "database error %s: %s", state, m);
}

/* Takes one result of query op->qi (consumes r unless it keeps it). */
void pg_result(struct pg_op *op, PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_PIPELINE_ABORTED) {
        PQclear(r);
        return;
    }
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        pg_result_error(op, r);
        PQclear(r);
        return;
    }
    if (op->status != BACKEND_OK) {
        PQclear(r);
        return;
    }
    switch (op->kind) {
    case OP_MGET:
        if (s == PGRES_TUPLES_OK && PQnfields(r) == 2) {
            PQclear(op->res);
            op->res = r;
            return;
        }
        op->status = BACKEND_CORRUPT;
        snprintf(op->err, sizeof op->err, "unexpected result shape");
        break;
    case OP_STEP:
        if (s == PGRES_TUPLES_OK) {
            struct backend_iter *it = op->it;
            if (PQnfields(r) != 2) {
                op->status = BACKEND_CORRUPT;
                snprintf(op->err, sizeof op->err, "unexpected result shape");
                break;
            }
            PQclear(it->batch);
            it->batch = r;
            it->row = 0;
            it->eof = PQntuples(r) < (int)it->st->batch_rows;
            return;
        }
        break;
    case OP_APPLY: {
        const struct pg_stmt *st = &op->stmts[op->qi < op->nstmts ? op->qi : 0];
        if (st->kind == ST_EXISTS && op->before)
            op->before[st->w] = PQntuples(r) == 1 && pg_int8(r, 0, 0) > 0;
        if (st->kind == ST_INSERT_ONLY && strcmp(PQcmdTuples(r), "1") != 0) {
            op->status = BACKEND_CONFLICT;      /* the key exists: nothing written */
            op->failed = st->w;
            snprintf(op->err, sizeof op->err, "expectation of write %zu failed", op->failed);
        }
        break;
    }
    case OP_ROLLBACK:
        break;
    }
    PQclear(r);
}

/* Serves the cursor's next buffered row into call; 1, or 0 at the end. */
int pg_iter_serve(struct backend_iter *it, struct backend_call *call)
{
    if (!it->batch || it->row >= PQntuples(it->batch))
        return 0;
    call->key = PQgetvalue(it->batch, it->row, 0);
    call->key_len = (size_t)PQgetlength(it->batch, it->row, 0);
    call->val = PQgetvalue(it->batch, it->row, 1);
    call->val_len = (size_t)PQgetlength(it->batch, it->row, 1);
    it->row++;
    return 1;
}

/* want_counts of a committed apply: replays the writes over each key's
   state before the call (from its checks or ST_EXISTS), so that each
   write sees the earlier writes of the array, as backend.h asks. */
static void pg_count(struct pg_op *op)
{
    for (size_t i = 0; i < op->n; i++) {
        unsigned char *have = &op->before[op->first[i]];
        if (op->w[i].op == BACKEND_PUT && !*have)
            op->created++;
        else if (op->w[i].op == BACKEND_DELETE && *have)
            op->removed++;
        *have = op->w[i].op == BACKEND_PUT;
    }
}

/* Orders an array of get_multi keys (pointers) by their bytes as
   backend.h orders keys. */
static int pg_mget_cmp(const void *a, const void *b)
{
    const struct backend_mget *x = *(const struct backend_mget *const *)a;
    const struct backend_mget *y = *(const struct backend_mget *const *)b;
    return bkey_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* A get_multi's rows given to its keys (sorted, each row found by binary
   search; a key named twice gets the row twice); keys without a row are
   BACKEND_NOTFOUND. Values are borrowed from res (op's, or the result of
   the op it rode on, which is delivered after it: pg_complete). A get
   (op->single) answers its call: its key's value, or BACKEND_NOTFOUND. */
static void pg_mget_answer(struct pg_op *op, const PGresult *res)
{
    struct backend_mget **sorted = malloc((op->nmget ? op->nmget : 1) * sizeof *sorted);
    if (!sorted) {
        op->status = BACKEND_NOMEM;
        snprintf(op->err, sizeof op->err, "out of memory");
        return;
    }
    for (size_t i = 0; i < op->nmget; i++) {
        op->mget[i].status = BACKEND_NOTFOUND;
        op->mget[i].val = NULL;
        op->mget[i].val_len = 0;
        sorted[i] = &op->mget[i];
    }
    qsort(sorted, op->nmget, sizeof *sorted, pg_mget_cmp);
    int rows = res ? PQntuples(res) : 0;
    for (int r = 0; r < rows; r++) {
        struct backend_mget row = { PQgetvalue(res, r, 0),
                                    (size_t)PQgetlength(res, r, 0), 0, NULL, 0 };
        const struct backend_mget *rp = &row;
        size_t lo = 0, hi = op->nmget;
        while (lo < hi) {               /* the first key >= the row's */
            size_t mid = lo + (hi - lo) / 2;
            if (pg_mget_cmp(&sorted[mid], &rp) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < op->nmget && pg_mget_cmp(&sorted[lo], &rp) == 0; lo++) {
            sorted[lo]->status = BACKEND_OK;
            sorted[lo]->val = PQgetvalue(res, r, 1);
            sorted[lo]->val_len = (size_t)PQgetlength(res, r, 1);
        }
    }
    free(sorted);
    if (op->single) {                   /* a get: the call's own answer */
        op->status = op->one.status;
        op->call->val = op->one.val;
        op->call->val_len = op->one.val_len;
    }
}

/* The pipeline sync of op arrived: the op is over on this connection
   (retried when a serialization failure allows), completed, and the
   connection goes back to the pool or to its cursor. */
void pg_finish(struct pg_conn *c, struct pg_op *op)
{
    struct backend_store *st = c->st;
    c->op = NULL;
    op->conn = NULL;
    if (op->kind == OP_ROLLBACK)
        c->holder = NULL;
    c->state = c->holder ? PGC_HELD : PGC_IDLE;
    if (op->kind == OP_APPLY && op->retry && op->retries < PG_RETRIES) {
        op->retries++;
        int rc = pg_send(c, op);
        if (rc < 0)
            pg_fail_as(op, rc);
        pg_drain(st);
        return;
    }
    if (op->kind == OP_MGET && op->status == BACKEND_OK) {
        /* the riders are answered and complete first (a get's NOTFOUND
           is its own answer, not the group's failure: pg_complete passes
           on only failures of the statement) */
        while (op->riders) {
            struct pg_op *r = op->riders;
            op->riders = r->rnext;
            r->rnext = NULL;
            r->status = BACKEND_OK;
            pg_mget_answer(r, op->res);
            pg_complete(r);
        }
        pg_mget_answer(op, op->res);
    }
    if (c->prep_failed && !c->holder)
        pg_conn_drop(c);                /* its prepared statements are unknown */
    if (op->kind == OP_APPLY && op->status == BACKEND_OK && op->before)
        pg_count(op);
    if (op->kind == OP_STEP) {
        struct backend_iter *it = op->it;
        if (op->status == BACKEND_OK) {
            op->status = pg_iter_serve(it, op->call);
        } else {
            it->broken = op->status;
            snprintf(it->err, sizeof it->err, "%s", op->err);
        }
    }
    pg_complete(op);
    pg_drain(st);
}

/* A write's key and index, sorted to find writes of the same key. */
struct pg_keyref {
    const void *key;
    size_t len, i;
};

/* Orders pg_keyrefs by key, then by write index. */
static int pg_keyref_cmp(const void *a, const void *b)
{
    const struct pg_keyref *x = a, *y = b;
    int c = bkey_cmp(x->key, x->len, y->key, y->len);
    if (c)
        return c;
    return (x->i > y->i) - (x->i < y->i);
}

/* Fills op->first: for each write, the index of the first write of the
   same key (sorting, so large arrays stay O(n log n)). */
static int pg_first(struct pg_op *op)
{
    struct pg_keyref *r = malloc(op->n * sizeof *r);
    op->first = malloc(op->n * sizeof *op->first);
    if (!r || !op->first) {
        free(r);
        return -1;
    }
    for (size_t i = 0; i < op->n; i++)
        r[i] = (struct pg_keyref){ op->w[i].key, op->w[i].key_len, i };
    qsort(r, op->n, sizeof *r, pg_keyref_cmp);
    for (size_t j = 0; j < op->n; j++) {
        int same = j && bkey_cmp(r[j - 1].key, r[j - 1].len, r[j].key, r[j].len) == 0;
        op->first[r[j].i] = same ? op->first[r[j - 1].i] : r[j].i;
    }
    free(r);
    return 0;
}

/* Plans an apply's statements: every expectation check, in array order,
 * then every write, in array order (see the file comment of postgres.c).
 *
 * Checks before writes: backend.h wants every expectation to see the
 * store as it was before the call, even when earlier writes of the array
 * touch the key, so no write may run before the last check. The checks
 * themselves write only ABSENT placeholders, and they are kept from
 * misleading the checks after them: a key's second ABSENT check is
 * implied by its first (skipped), and a PRESENT or VERSION check after a
 * passed ABSENT check of the same key must fail (ST_FAIL); a check before
 * the ABSENT one sees the real row, which no statement has touched. Every
 * placeholder is then replaced or deleted by the writes, since its own
 * write comes after it. The common case, an ABSENT put that is the only
 * write of its key, inserts its value at once (ST_INSERT_ABSENT) and has
 * no write statement: nothing after it reads or checks that key.
 *
 * Concurrent front ends (READ COMMITTED): every check holds its key until
 * the commit: PRESENT and VERSION lock the row (FOR UPDATE, re-evaluated
 * against a concurrent committed update), and ABSENT holds the key's
 * unique index entry through its placeholder insert, so a second
 * transaction inserting or checking the key waits and then sees it. A
 * plain "SELECT ... count(*) = 0" for ABSENT would lock nothing (a missing
 * row cannot be locked) and let two front ends both pass; SERIALIZABLE
 * would work too but retries far more under load. Lock order is the
 * array's: opposite orders may deadlock (40P01), which is retried.
 *
 * want_counts: each key's state before the call is known from a passed
 * check (ABSENT: absent, else present) or asked by one ST_EXISTS in the
 * check phase; pg_count() replays the writes over it. */
int pg_plan(struct pg_op *op, int want_counts)
{
    enum { K_UNKNOWN, K_ABSENT, K_PRESENT };
    /* known: per first write of a key, what its passed checks say; multi:
       1 when the key has several writes, 2 when its only write is done by
       its ABSENT check. */
    unsigned char *known = calloc(2 * op->n, 1), *multi = known + op->n;
    op->stmts = malloc(2 * op->n * sizeof *op->stmts);
    if (want_counts)
        op->before = calloc(op->n, 1);
    if (!known || !op->stmts || (want_counts && !op->before) || pg_first(op) < 0) {
        free(known);
        return -1;
    }
    struct pg_stmt *s = op->stmts;
    size_t k = 0;
    for (size_t i = 0; i < op->n; i++)
        if (op->first[i] != i)
            multi[op->first[i]] = 1;
    for (size_t i = 0; i < op->n; i++) {
        enum backend_expect e = op->cond ? op->cond[i].expect : BACKEND_EXPECT_ANY;
        unsigned char *kn = &known[op->first[i]];
        if (e == BACKEND_EXPECT_ABSENT) {
            if (*kn != K_ABSENT && op->w[i].op == BACKEND_PUT && !multi[op->first[i]]) {
                s[k++] = (struct pg_stmt){ ST_INSERT_ABSENT, i };
                multi[i] = 2;
            } else if (*kn != K_ABSENT) {
                s[k++] = (struct pg_stmt){ ST_CHECK_ABSENT, i };
            }
            *kn = K_ABSENT;
        } else if (e == BACKEND_EXPECT_PRESENT || e == BACKEND_EXPECT_VERSION) {
            if (*kn == K_ABSENT)
                s[k++] = (struct pg_stmt){ ST_FAIL, i };
            else if (e == BACKEND_EXPECT_VERSION || *kn != K_PRESENT)
                s[k++] = (struct pg_stmt){ e == BACKEND_EXPECT_VERSION ? ST_CHECK_VERSION
                                                                      : ST_CHECK_PRESENT, i };
            if (*kn == K_UNKNOWN)
                *kn = K_PRESENT;
        }
    }
    for (size_t i = 0; i < op->n && want_counts; i++) {
        if (op->first[i] != i)
            continue;
        if (known[i] == K_UNKNOWN)
            s[k++] = (struct pg_stmt){ ST_EXISTS, i };
        op->before[i] = known[i] == K_PRESENT;
    }
    for (size_t i = 0; i < op->n; i++)
        if (multi[i] != 2)
            s[k++] = (struct pg_stmt){ op->w[i].op == BACKEND_PUT ? ST_UPSERT : ST_DELETE, i };
    /* one insert alone: no other statement to abort, so the plain INSERT
       and its row count do (doc/performance.md, PostgreSQL: database CPU
       per request) */
    if (k == 1 && s[0].kind == ST_INSERT_ABSENT)
        s[0].kind = ST_INSERT_ONLY;
    op->nstmts = k;
    free(known);
    return 0;
}

/* Runs one schema statement synchronously; returns its SQLSTATE class
   ("" when it succeeded). */
static int pg_exec(PGconn *pg, const char *sql, PGresult **out, char *state, size_t statelen)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (out)
            *out = r;
        else
            PQclear(r);
        return 0;
    }
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(state, statelen, "%s", st ? st : "");
    PQclear(r);
    return -1;
}

/* The key/value table of schema version 2 (see postgres.c). The primary
   key's name is given so that a migrated database (whose version-1 table
   kept the default name until it was dropped) and a new one are alike. */
#define PG_KV_DDL "CREATE TABLE IF NOT EXISTS tabled_kv (kp bytea NOT NULL, kh bytea NOT NULL, " \
    "kr bytea NOT NULL, v bytea NOT NULL, ver bigint NOT NULL, " \
    "CONSTRAINT tabled_kv_pk PRIMARY KEY (kp, kh))"

/* Runs statements in order until one fails; the index of the failing one,
   or n (its SQLSTATE in state). */
static size_t pg_exec_all(PGconn *pg, const char *const *sql, size_t n, char *state,
                          size_t statelen)
{
    size_t i = 0;
    while (i < n && pg_exec(pg, sql[i], NULL, state, statelen) == 0)
        i++;
    return i;
}

/* Upgrades a version-1 database (tabled_kv(k bytea PRIMARY KEY, v, ver),
   keys of at most 2600 bytes) to version 2 in one transaction that first
   locks the version row, so that a concurrent front end waits and then
   finds version 2 (and does nothing). Every version-1 key is at most
   PG_KEY_PREFIX bytes long, so it becomes (kp = k, kh = '', kr = ''). Old
   front ends still running on the database fail from then on (their
   statements name column k): stop them before starting this one. */
static int pg_migrate_v1(PGconn *pg, char *err, size_t errlen)
{
    static const char *const steps[] = {
        "ALTER TABLE tabled_kv RENAME TO tabled_kv_v1",
        PG_KV_DDL,
        "INSERT INTO tabled_kv (kp, kh, kr, v, ver) SELECT k, '', '', v, ver FROM tabled_kv_v1",
        "DROP TABLE tabled_kv_v1",
        "UPDATE tabled_meta SET value = 2 WHERE name = 'schema_version'",
        "COMMIT",
    };
    char state[8] = "", m[160];
    PGresult *r = NULL;
    if (pg_exec(pg, "BEGIN", NULL, state, sizeof state) < 0 ||
        pg_exec(pg, "SELECT value FROM tabled_meta WHERE name = 'schema_version' FOR UPDATE", &r,
                state, sizeof state) < 0) {
        pg_err(err, errlen, "upgrading the schema from version 1 failed (%s): %s", state,
               pg_msg(PQerrorMessage(pg), m, sizeof m));
        pg_exec(pg, "ROLLBACK", NULL, state, sizeof state);
        return BACKEND_IOERR;
    }
    long long v = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    if (v != 1)                         /* another front end upgraded it meanwhile */
        return pg_exec(pg, "ROLLBACK", NULL, state, sizeof state) < 0 ? BACKEND_IOERR
                                                                     : BACKEND_OK;
    size_t n = sizeof steps / sizeof *steps;
    if (pg_exec_all(pg, steps, n, state, sizeof state) < n) {
        pg_err(err, errlen, "upgrading the schema from version 1 failed (%s): %s", state,
               pg_msg(PQerrorMessage(pg), m, sizeof m));
        pg_exec(pg, "ROLLBACK", NULL, state, sizeof state);
        return BACKEND_IOERR;
    }
    return BACKEND_OK;
}

/* Creates the tables when missing, checks the schema version and upgrades
   a version-1 database (at open, synchronously). Concurrent first starts
   of several front ends may collide on CREATE TABLE IF NOT EXISTS; that
   is retried. */
int pg_schema(PGconn *pg, char *err, size_t errlen)
{
    char ins[200], state[8] = "", m[160];
    snprintf(ins, sizeof ins, "INSERT INTO tabled_meta (name, value) VALUES ('schema_version', %d) "
             "ON CONFLICT (name) DO NOTHING", PG_SCHEMA_VERSION);
    const char *ddl[] = {
        "CREATE TABLE IF NOT EXISTS tabled_meta (name text PRIMARY KEY, value bigint NOT NULL)",
        PG_KV_DDL,
        ins,
    };
    size_t nddl = sizeof ddl / sizeof *ddl;
    for (int attempt = 0; pg_exec_all(pg, ddl, nddl, state, sizeof state) < nddl; attempt++) {
        int race = !strcmp(state, "23505") || !strcmp(state, "42P07") || !strcmp(state, "40001");
        if (!race || attempt >= 3) {
            pg_err(err, errlen, "creating the schema failed (%s): %s", state,
                   pg_msg(PQerrorMessage(pg), m, sizeof m));
            return BACKEND_IOERR;
        }
    }
    PGresult *r = NULL;
    if (pg_exec(pg, "SELECT value FROM tabled_meta WHERE name = 'schema_version'", &r, state,
                sizeof state) < 0) {
        pg_err(err, errlen, "reading the schema version failed: %s",
               pg_msg(PQerrorMessage(pg), m, sizeof m));
        return BACKEND_IOERR;
    }
    long long v = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    if (v > PG_SCHEMA_VERSION) {
        pg_err(err, errlen, "the database's tabled schema is version %lld, newer than this "
               "tabled's (%d): upgrade tabled, or use another database", v, PG_SCHEMA_VERSION);
        return BACKEND_INVALID;
    }
    if (v < 1) {
        pg_err(err, errlen, "the database's tabled schema version row is missing or bad");
        return BACKEND_CORRUPT;
    }
    if (v == 1) {
        int rc = pg_migrate_v1(pg, err, errlen);
        if (rc != BACKEND_OK)
            return rc;
    }
    /* A table made by hand (e.g. on YugabyteDB, from an older README) may
       have another layout than the version row claims. */
    if (pg_exec(pg, "SELECT kp, kh, kr, v, ver FROM tabled_kv WHERE false", NULL, state,
                sizeof state) < 0) {
        pg_err(err, errlen, "tabled_kv lacks the columns of schema version %d (kp, kh, kr, v, "
               "ver; see the README's DDL): %s", PG_SCHEMA_VERSION,
               pg_msg(PQerrorMessage(pg), m, sizeof m));
        return BACKEND_CORRUPT;
    }
    return BACKEND_OK;
}
