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
#include "backends/backend.h"
#include "core/config.h"
#include "core/http.h"
#include "protocol/entity.h"
#include "protocol/entity_json.h"
#include "protocol/errors.h"
#include "protocol/tables.h"
#include "protocol/url.h"

/* Operations after routing (SPEC 1.4). */
enum op {
    OP_NONE = 0,
    OP_QUERY_TABLES,
    OP_GET_TABLE,
    OP_CREATE_TABLE,
    OP_DELETE_TABLE,
    OP_QUERY_ENTITIES,
    OP_GET_ENTITY,
    OP_INSERT_ENTITY,
    OP_UPDATE_ENTITY,        /* PUT with If-Match */
    OP_INSERT_OR_REPLACE,    /* PUT without If-Match */
    OP_MERGE_ENTITY,         /* MERGE/PATCH with If-Match */
    OP_INSERT_OR_MERGE,      /* MERGE/PATCH without If-Match */
    OP_DELETE_ENTITY,
    OP_BATCH,
    OP_GET_ACL,
    OP_SET_ACL,
    OP_GET_SERVICE_PROPERTIES,
    OP_SET_SERVICE_PROPERTIES,
    OP_GET_SERVICE_STATS,
    OP_PREFLIGHT,
};

/* Resource kinds a path can name (before the verb picks the operation). */
enum resource {
    RES_NONE = 0,
    RES_SERVICE,     /* "/" with restype/comp */
    RES_TABLES,      /* /Tables, /Tables() */
    RES_TABLE_ENTRY, /* /Tables('T') */
    RES_TABLE,       /* /T, /T() */
    RES_ENTITY,      /* /T(PartitionKey='..',RowKey='..') */
    RES_BATCH,       /* /$batch */
};

struct service {
    const struct config *cfg;
    const struct backend_ops *ops;
    struct backend_store *st;
    struct table_cache *tables;
    int dirty;                 /* writes applied since the last sync */
    int64_t last_timestamp;    /* strictly increasing write Timestamps */
    uint64_t rng[2];           /* xorshift state for request ids */
    struct buf key, val;       /* scratch for encoding (reset per use) */
    struct arena *scratch;     /* per-row scratch of long scans */
    struct auth_ctx auth;      /* authentication settings */
    uint64_t rows_examined;    /* entities read by queries (planner tests, metrics) */
    /* core/throttle, core/fault, core/metrics (service_attach; NULL = off) */
    struct throttle *throttle;
    struct fault_set *faults;
    struct metrics *metrics;
    unsigned cur_account;      /* account index of the request being handled */
    int64_t etag_ticks;        /* the last ETag written, and its text ("" = none) */
    char etag[80];
    size_t etag_len;
};

struct req_ctx {
    struct service *svc;
    struct request *req;
    struct response *resp;
    struct arena *a;

    char request_id[40];
    const char *version;       /* effective x-ms-version */
    const struct account_cfg *account;
    int secondary;             /* "-secondary" endpoint */
    int unknown_account;       /* the URL names an account that is not configured */
    const char *base;          /* scheme://host[:port][/account], no trailing '/' */

    struct query_param *qp;
    size_t nqp;

    enum resource res;
    enum http_method method;   /* after X-HTTP-Method tunnelling */
    enum op op;
    const char *table;         /* decoded table name from the URL */
    size_t table_len;
    const char *pk, *rk;       /* decoded keys of RES_ENTITY */
    size_t pk_len, rk_len;

    int odata;                 /* OData operation: JSON errors, no-cache headers */
    enum odata_level level;    /* negotiated JSON level */
    const char *prefer;        /* "return-content" / "return-no-content" / NULL */
    int prefer_echo;           /* send Preference-Applied (insert operations) */
    struct auth_op aop;        /* what auth_check authorized */
    struct auth_result auth;   /* who is calling, with what rights */
    int auth_failed;           /* the error comes from auth_check */
    int in_batch;              /* a $batch sub-operation */
    struct batch_state *batch; /* that batch's cross-operation checks */
    const char *msg_prefix;    /* "2:" before error messages of batch parts */
    /* throttling and fault injection (service.c) */
    int guarded;               /* buckets and fault rules were consulted */
    int throttled;             /* refused by a bucket (Retry-After extension) */
    int timeout_after;         /* injected timeout: run, then answer 500 */
    const char *run_pk;        /* query charging: current run of one partition */
    size_t run_pk_len;
    int64_t run_n, page_n;     /* entities of the run, of the page */
};

/* reply.c: answers. reply_error picks JSON or storage XML (SPEC 9.1.4). */
void reply_error(struct req_ctx *c, enum terr e);
void reply_error_msg(struct req_ctx *c, enum terr e, const char *message);
/* An authentication/authorization failure with auth_result's decoration. */
void reply_auth_error(struct req_ctx *c, enum terr e);
/* Sets the JSON Content-Type of the negotiated level. */
void reply_json_content_type(struct req_ctx *c);
/* Adds the headers every response carries (called once, at the end). */
void reply_finish(struct req_ctx *c);
/* odata.metadata prefix: BASE + "/$metadata#" */
const char *reply_metadata_url(struct req_ctx *c, const char *suffix);

/* odata.c: content negotiation (SPEC 2.3, 2.4). 0 or the error to send. */
enum terr odata_negotiate(struct req_ctx *c, int body_needed);
/* Prefer header (SPEC 2.5). */
void odata_prefer(struct req_ctx *c);

/* ops_tables.c */
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
    struct entity e;           /* what to store; keys always set */
    const char *key;           /* backend key (arena) */
    size_t key_len;
    const char *val;           /* encoded value, set by entity_commit (in
                                  svc->val: valid during the commit only) */
    size_t val_len;
};
enum terr entity_prepare(struct req_ctx *c, struct entity_write *w);
int entity_commit(struct req_ctx *c, struct entity_write *w, size_t n);
void entity_respond(struct req_ctx *c, const struct entity_write *w);
void op_get_entity(struct req_ctx *c);
void op_write(struct req_ctx *c);          /* insert/update/merge/upserts/delete */

/* ops_batch.c */
struct batch_state;
void op_batch(struct req_ctx *c);
/* One table, one PartitionKey, each RowKey once (SPEC 8.4). */
enum terr batch_check_entity(struct req_ctx *c, const struct entity_write *w);

/* ops_query.c */
void op_query_entities(struct req_ctx *c);

/* service.c: throttling and fault injection of the operations that find
 * their partition late (SPEC 13.2). A batch is admitted once its first
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

/* ops_service.c: CORS (SPEC 3.17, 11.4). op_cors_headers adds the CORS
 * headers of an actual request; called once the response is complete. */
void op_preflight(struct req_ctx *c);
void op_cors_headers(struct req_ctx *c);

/* ops_acl.c: Get/Set Table ACL (SPEC 3.12, 3.13, 11.3). */
void op_get_acl(struct req_ctx *c);
void op_set_acl(struct req_ctx *c);

/* ops_props.c: service properties and stats (SPEC 3.14-3.16, 11.1, 11.2). */
void op_get_service_properties(struct req_ctx *c);
void op_set_service_properties(struct req_ctx *c);
void op_get_service_stats(struct req_ctx *c);

/* service.c helpers shared by the operations. */
int64_t service_next_timestamp(struct service *svc);
/* A random version-4 UUID (request ids, multipart boundaries). */
void service_uuid(struct service *svc, char out[40]);
/* Applies writes; marks the service dirty. 0 or backend status (logged). */
int service_apply(struct service *svc, const struct backend_write *w, size_t n);
/* Looks up c->table for the account; TERR_TableNotFound when absent. */
enum terr ctx_table(struct req_ctx *c, const struct table_info **out);

#endif
