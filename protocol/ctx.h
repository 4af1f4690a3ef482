/* ctx.h - what the protocol layer knows about one request while handling it.
 *
 * service.c builds a struct req_ctx (account, version, route, negotiated
 * format), the ops_*.c files run the operation, and the reply_* helpers in
 * reply.c write status, headers and body in the service's exact shapes. */
#ifndef TABLED_CTX_H
#define TABLED_CTX_H
#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"
#include "protocol/service.h"
#include "store/catalog.h"
#include "store/store.h"
#include "core/http.h"
#include "core/rand.h"
#include "store/entity.h"
#include "codec/entity_json.h"
#include "codec/errors.h"
#include "protocol/optable.h"
#include "protocol/version.h"
#include "store/tables.h"
#include "codec/url.h"

struct service {
    struct service_settings set; /* a copy of service_new's */
    struct store *store;       /* store/store.h: entities, writes, failures */
    struct catalog *cat;       /* store/catalog.h: the tables and their upkeep */
    /* the secondary endpoint's reads (service_set_secondary): a store over
       replicas and its catalogue for reading; NULL: the primary's serve */
    struct store *sec_store;
    struct catalog *sec_cat;
    int shared;                /* other front ends share the store */
    struct rand_x128 rng;      /* xorshift128+ state for request ids */
    /* encoding buffers lent to one request at a time (service_run), so
       that their capacity is kept across requests */
    struct buf kbuf, vbuf;
    int bufs_lent;
    struct auth_ctx auth;      /* authentication settings */
    uint64_t rows_examined;    /* entities read by queries (planner tests, metrics) */
    /* core/throttle, core/fault, core/metrics (service_attach; NULL = off) */
    struct throttle *throttle;
    struct fault_set *faults;
    struct metrics *metrics;
    struct advisor *advisor;   /* core/advisor (service_attach_advisor; NULL = off) */
    int64_t etag_ticks;        /* the last ETag written, and its text ("" = none) */
    char etag[80];
    size_t etag_len;
    /* background work (service_background): purges of deleted tables, and
       the state of a store whose writes failed (probed until they work) */
    void (*wake)(void *arg);   /* asks core/ for a service_background() call */
    void *wake_arg;
    struct service_job *jobs;  /* requests waiting on a deferred store */
    /* the background step on a deferred store runs on a coroutine too */
    struct coro *bg_co;        /* while bg_running */
    int bg_running, bg_waited, bg_result;
    int quiescing;             /* service_quiesce: no new background step */
    uint64_t bg_not_before_us; /* no background step before (a wait asked for) */
    /* giving freed memory back when idle (core/heap.h, give_back_step):
       requests begun, their number when the wait began, and the time the
       wait ends (0: none) */
    uint64_t requests, give_back_seen, give_back_at_us;
    int importing;             /* a POST /import runs (ops_import.c: one at a time) */
    struct url_memo *url_memo; /* recent query strings' parse (codec/url.h) */
    struct version_memo version_memo;  /* the last x-ms-version's answers */
    struct props_cache *props; /* ops_props.c's decoded service properties
                                  per account (made at first use) */
};

struct req_ctx {
    struct service *svc;
    struct request *req;
    struct response *resp;
    struct arena *a;
    /* encoding scratch of this request (a $batch's parts share their
       batch's): requests that wait on storage interleave, so none is kept
       in struct service */
    struct buf *kbuf, *vbuf;

    char request_id[40];
    const char *version;       /* effective version: the known version whose
                                * behaviour applies (service.c, doc/protocol.md, Service versions) */
    const char *version_echo;  /* x-ms-version to answer (the version as sent,
                                * also when newer than any known); NULL: version */
    const struct account_cfg *account;
    int secondary;             /* "-secondary" endpoint */
    int unknown_account;       /* the URL names an account that is not configured */
    const char *account_tried; /* that account's name as the URL gives it */
    int path_style;            /* the account is the path's first segment */
    const char *base;          /* scheme://host[:port][/account], no trailing '/' */

    struct query_param *qp;
    size_t nqp;

    enum resource res;
    enum http_method method;   /* after X-HTTP-Method tunnelling */
    enum op op;
    const struct op_def *def;  /* op's row (optable.h); NULL: not routed */
    const char *table;         /* decoded table name from the URL */
    size_t table_len;
    const char *pk, *rk;       /* decoded keys of RES_ENTITY */
    size_t pk_len, rk_len;

    int odata;                 /* OData operation: JSON errors, no-cache headers */
    enum odata_level level;    /* negotiated JSON level */
    int negotiated;            /* odata_negotiate ran */
    int atom_body;             /* a $batch part whose body is an Atom entry */
    int atom;                  /* AtomPub XML negotiated (versions before
                                * 2015-12-11, codec/atom.h) */
    const char *prefer;        /* "return-content" / "return-no-content" / NULL */
    int prefer_echo;           /* send Preference-Applied (insert operations) */
    struct auth_op aop;        /* what auth_check authorized */
    struct auth_result auth;   /* who is calling, with what rights */
    int auth_failed;           /* the error comes from auth_check */
    int auth_logged;           /* its log line is written (protocol/authlog.h) */
    int in_batch;              /* a $batch sub-operation */
    struct batch_state *batch; /* that batch's cross-operation checks */
    const char *msg_prefix;    /* "2:" before error messages of batch parts */
    /* The message of an error that names a value (an OutOfRangeInput's key,
       terr_range_message), err_msg_len bytes (NUL bytes allowed): reply_error
       answers err_code with it instead of the code's fixed text. */
    enum terr err_code;
    const char *err_msg;
    size_t err_msg_len;
    /* throttling and fault injection (service.c) */
    int guarded;               /* buckets and fault rules were consulted */
    int throttled;             /* refused by a bucket (Retry-After extension) */
    int timeout_after;         /* injected timeout: run, then answer 500 */
    const char *run_pk;        /* query charging: current run of one partition */
    size_t run_pk_len;
    int64_t run_n, page_n;     /* entities of the run, of the page */
};

/* reply.c: answers. reply_error picks JSON or storage XML (doc/protocol.md, Choosing the error format). */
void reply_error(struct req_ctx *c, enum terr e);
void reply_error_msg(struct req_ctx *c, enum terr e, const char *message);
/* Sets the message (len bytes) that names the value of error e, for the
   reply_error of e that follows (ctx.h err_msg). */
void reply_set_error_msg(struct req_ctx *c, enum terr e, const char *message, size_t len);
/* An authentication/authorization failure with auth_result's decoration. */
void reply_auth_error(struct req_ctx *c, enum terr e);
/* Sets the JSON Content-Type of the negotiated level. */
void reply_json_content_type(struct req_ctx *c);
/* Adds the headers every response carries (called once, at the end). */
void reply_finish(struct req_ctx *c);
/* odata.metadata prefix: BASE + "/$metadata#" */
const char *reply_metadata_url(struct req_ctx *c, const char *suffix);

/* odata.c: content negotiation (doc/protocol.md, Content negotiation). 0 or the error to send. */
enum terr odata_negotiate(struct req_ctx *c, int body_needed);
/* Prefer header (doc/protocol.md, Prefer). */
void odata_prefer(struct req_ctx *c);
/* Whether c's version still serves Atom (before 2015-12-11). */
int odata_atom_allowed(const struct req_ctx *c);
/* An Atom request body (Content-Type naming atom or xml): for a version
 * that serves Atom, replaces req's body with the JSON object of its
 * m:properties (atom_to_json) and returns TERR_NONE; otherwise the error
 * (415 AtomFormatNotSupported, 400 InvalidInput for a malformed entry). */
enum terr odata_atom_body(struct req_ctx *c, struct request *req);
/* Sets the Atom response headers (Content-Type, DataServiceVersion). */
void reply_atom_content_type(struct req_ctx *c);


/* ops_tables.c */
/* ops_import.c: the admin listener's POST /import (service_import). */
void op_import(struct req_ctx *c);
void op_query_tables(struct req_ctx *c);
void op_get_table(struct req_ctx *c);
void op_create_table(struct req_ctx *c);
void op_delete_table(struct req_ctx *c);

/* ops_entities.c: single-entity operations. A write is prepared (all
 * checks, the resulting entity), committed (one Timestamp, one atomic
 * apply() for any number of prepared writes) and answered; $batch uses
 * the same three steps for every operation of a changeset. */
struct entity_write {
    const struct table_info *t;
    enum op op;
    int del;                   /* a delete, not a put */
    int created;               /* a put of an entity that did not exist */
    struct store_expect cond;  /* what the store expects of the key */
    struct store_precond pc;   /* If-Match as parsed */
    int blind;                 /* written without a read: cond decides */
    int need_read;             /* entity_prepare_early: judged on a read
                                  still to be made (entity_judge) */
    int64_t cur_ticks;         /* Timestamp of the version replaced (0: none) */
    struct entity e;           /* what to store; keys always set */
    const char *key;           /* entity key (arena) */
    size_t key_len;
    int pre_found;             /* the entity as read with the table's row
                                  (entity_table_first): 1 found (pre_e),
                                  0 absent, a negative store status, or 2:
                                  not read that way */
    struct entity pre_e;
};
enum terr entity_prepare(struct req_ctx *c, struct entity_write *w);
/* entity_prepare in two steps, for callers that read many entities at
 * once ($batch): every check that needs no read of the entity, setting
 * w->need_read when the verdict needs its current state; then, for such a
 * write, entity_judge with that state (found, and cur when found: it may
 * be merged into and becomes the entity written). */
enum terr entity_prepare_early(struct req_ctx *c, struct entity_write *w);
enum terr entity_judge(struct req_ctx *c, struct entity_write *w, int found, struct entity *cur);
/* 0, STORE_CONFLICT (*failed: the write refused, when failed is not
 * NULL) or a store status. */
int entity_commit(struct req_ctx *c, struct entity_write *w, size_t n, size_t *failed);
/* The answer for a write whose expectation the store refused: reads the
 * entity now and judges again (409, 404, 412), or TERR_NONE when the
 * write would go now (it raced another: prepare it again). */
enum terr entity_conflict(struct req_ctx *c, const struct entity_write *w);
/* entity_conflict on a state already read (found; cur when found). */
enum terr entity_conflict_on(struct req_ctx *c, const struct entity_write *w, int found,
                             const struct entity *cur);
void entity_respond(struct req_ctx *c, const struct entity_write *w);
void op_get_entity(struct req_ctx *c);
void op_write(struct req_ctx *c);          /* insert/update/merge/upserts/delete */

/* ops_batch.c */
struct batch_state;
void op_batch(struct req_ctx *c);
/* The table the changeset's first operation resolved, when c names the
 * same one (NULL otherwise): the later operations need not look it up
 * again (on a shared store that is a read per operation). */
const struct table_info *batch_table(struct req_ctx *c);
/* One table, one PartitionKey, each RowKey once (doc/protocol.md, Batch limits). */
enum terr batch_check_entity(struct req_ctx *c, const struct entity_write *w);

/* ops_query.c */
void op_query_entities(struct req_ctx *c);

/* service.c: throttling and fault injection of the operations that find
 * their partition late (doc/protocol.md, Token buckets). A batch is admitted once its first
 * operation is routed (sub), at one token per operation (n), before any
 * backend access; a failure is the batch's top-level answer. A query is
 * checked (buckets not empty) once planned, then charged one token per
 * returned entity (minimum 1) after its page: service_query_entity() for
 * each entity in page order, service_query_done() at the end. */
struct filter_plan;
struct multipart_op;
enum terr service_batch_admit(struct req_ctx *c, const struct req_ctx *sub,
                              const struct multipart_op *op, size_t n);
enum terr service_query_admit(struct req_ctx *c, const struct filter_plan *plan);
void service_query_entity(struct req_ctx *c, const char *pk, size_t pk_len);
void service_query_done(struct req_ctx *c);

/* advise.c: the partition advisor's records of answered operations
 * (only when svc->advisor is set). */
struct table_info;
void service_advise_read(struct req_ctx *c, uint64_t now_us);
void service_advise_writes(struct req_ctx *c, const struct entity_write *w, size_t n);
void service_advise_query(struct req_ctx *c, const struct table_info *t,
                          const struct filter_plan *plan, uint64_t examined, uint64_t returned);
/* A request refused by a bucket; pk NULL for the account's bucket. */
void service_advise_throttled(struct req_ctx *c, const char *table, size_t table_len,
                              const char *pk, size_t pk_len);

/* ops_service.c: CORS (doc/protocol.md, Preflight requests; CORS). op_cors_headers adds the CORS
 * headers of an actual request; called once the response is complete. */
void op_preflight(struct req_ctx *c);
void op_cors_headers(struct req_ctx *c);

/* ops_acl.c: Get/Set Table ACL (doc/protocol.md, Get Table ACL; Set Table ACL). */
void op_get_acl(struct req_ctx *c);
void op_set_acl(struct req_ctx *c);

/* ops_props.c: service properties and stats (doc/protocol.md, Get Service Properties). */
void op_get_service_properties(struct req_ctx *c);
void op_set_service_properties(struct req_ctx *c);
void op_get_service_stats(struct req_ctx *c);

/* service.c helpers shared by the operations. */
/* Fills c->aop (what auth checks) from c's row and route: top-level
 * requests and $batch parts alike. */
void service_auth_op(struct req_ctx *c);
/* A random version-4 UUID (request ids, multipart boundaries). */
void service_uuid(struct service *svc, char out[40]);
/* Looks up table name of c's account: from the catalogue cache, or on a
 * store shared by several front ends from its row (store/tables.h; *out
 * then lives in c's arena). STORE_OK, STORE_NOTFOUND, or a failure status
 * (logged). */
int service_table(struct req_ctx *c, const char *name, size_t name_len,
                  const struct table_info **out);
/* Shared stores: service_table for c->table, and in the same store call
 * the value under key (catalog_table_with: copied into c's arena, *found 1
 * or 0). The value is the entity's only if key was built with the id
 * (*out)->id. STORE_OK, STORE_NOTFOUND, or a failure status (logged). */
int service_table_with(struct req_ctx *c, const struct table_info **out, const void *key,
                       size_t key_len, void **val, size_t *len, int *found);
/* Looks up c->table for the account; TERR_TableNotFound when absent, the
 * store's error (terr_from_store) when it cannot be read. */
enum terr ctx_table(struct req_ctx *c, const struct table_info **out);
/* The store and the catalogue that c's reads use: on the secondary
 * endpoint the replica's when one is set (service_set_secondary), else the
 * primary's. Writes always use svc->store and svc->cat (the secondary
 * refuses them before). */
struct store *ctx_read_store(const struct req_ctx *c);
struct catalog *ctx_read_cat(const struct req_ctx *c);

#endif
