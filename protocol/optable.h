/* optable.h - the operation table: one row per operation of the Table
 * service (doc/protocol.md, Routing table), read by routing, authentication, metrics, fault
 * injection, throttling and dispatch (service.c) and by $batch parts
 * (ops_batch.c). Adding an operation is one row in optable.c plus its
 * handler. Modelled on Redis's command table. Adding an operation: its enum
 * value, its row (route, flags, rights, fault class, cost, store intent,
 * advisor kind) and its handler. */
#ifndef TABLED_OPTABLE_H
#define TABLED_OPTABLE_H
#include "auth/auth.h"
#include "advisor/advisor.h"
#include "guard/fault.h"
#include "core/http.h"
#include "codec/errors.h"
#include "store/store.h"

/* Operations after routing (doc/protocol.md, Routing table). OP_NONE: not routed (yet). */
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
    OP_COUNT                 /* number of enum op values, OP_NONE included */
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

/* The HTTP methods (after X-HTTP-Method tunnelling) a row matches. */
#define OPM(m) (1u << (m))
#define OPM_READ (OPM(HTTP_M_GET) | OPM(HTTP_M_HEAD))    /* HEAD reads as GET */
#define OPM_MERGE (OPM(HTTP_M_MERGE) | OPM(HTTP_M_PATCH)) /* PATCH is MERGE */

/* Row flags. */
enum {
    OPF_WRITES = 1u << 0,      /* changes data: refused on the secondary */
    OPF_BODY = 1u << 1,        /* the successful answer carries an OData body */
    OPF_XML = 1u << 2,         /* storage XML, not OData (errors in XML too) */
    OPF_IF_MATCH = 1u << 3,    /* matches only with an If-Match header */
    OPF_NO_IF_MATCH = 1u << 4, /* matches only without one */
    OPF_ANY_RESOURCE = 1u << 5,/* matches its verb on every resource */
    OPF_BODY_ENTITY = 1u << 6, /* the request body is an entity or table
                                  (an Atom one is read as its JSON) */
    OPF_PREFER = 1u << 7,      /* honours Prefer (insert operations) */
    OPF_ENVELOPE = 1u << 8,    /* a $batch envelope: its parts negotiate */
    OPF_CHANGESET = 1u << 9,   /* allowed in a $batch changeset */
    OPF_BATCH_QUERY = 1u << 10,/* allowed as a $batch's one query */
    OPF_BARE = 1u << 11,       /* answered without authentication, content
                                  negotiation or admission (CORS preflight) */
};

/* How the throttle charges an operation (doc/protocol.md, Token buckets, service.c). */
enum op_cost {
    OP_COST_NONE = 0,    /* never admitted (CORS preflight) */
    OP_COST_ONE,         /* one token at admission, partition from the URL */
    OP_COST_ONE_BODY_PK, /* one token, partition = the body's PartitionKey */
    OP_COST_PER_OP,      /* one per batch operation (service_batch_admit) */
    OP_COST_PER_ENTITY,  /* one per returned entity (service_query_admit) */
};

struct req_ctx;

/* One operation. */
struct op_def {
    enum op op;
    const char *name;            /* logs and metrics (the REST API's name) */
    enum resource res;           /* resource it acts on */
    const char *comp;            /* comp= it needs; NULL: no comp */
    const char *restype;         /* restype= it needs; NULL: any */
    unsigned methods;            /* OPM bits */
    unsigned flags;              /* OPF_* */
    struct auth_need auth;       /* what auth_check authorizes (rights) */
    enum fault_class fault;      /* the fault rules' class */
    enum op_cost cost;           /* throttle charging */
    void (*handler)(struct req_ctx *c);
    /* entity writes only: what the write does to its entity in the
       store's terms (store_judge), and the advisor's name for it */
    enum store_intent intent;
    enum advisor_op advise;
};

/* Where a request being matched comes from. */
enum optable_from {
    OPTABLE_REQUEST = 0,  /* a top-level request */
    OPTABLE_PART,         /* a $batch part: its comp is ignored, HEAD is no
                             GET, and only batch rows (OPF_CHANGESET,
                             OPF_BATCH_QUERY) match; every failure is
                             InvalidInput */
};

/* The first row (in enum order) that takes a request on resource res
 * with method m (tunnelled), the query's comp and restype values (NULL
 * when absent; a comp counts only on resources that have comp rows) and
 * If-Match present or not; a row with OPF_ANY_RESOURCE takes its verb
 * anywhere. NULL with *err set when none does, the error chosen as the
 * service does (doc/protocol.md, Routing table). *xml (may be NULL) tells whether the answer,
 * the error too, is storage XML rather than OData. */
const struct op_def *optable_match(enum resource res, enum http_method m, const char *comp,
                                   const char *restype, int has_if_match,
                                   enum optable_from from, int *xml, enum terr *err);

/* Whether c's successful answer carries an OData body: its row says so
 * and Prefer does not ask for none (content negotiation needs to know). */
int optable_answer_body(const struct req_ctx *c);

/* The row of op, or NULL for OP_NONE and values out of range. */
const struct op_def *optable_get(enum op op);

/* The metric and log name of op ("Unrouted" for OP_NONE). */
const char *optable_name(enum op op);

/* The rows, for the table's own tests: optable_rows()[i] for i < *n. */
const struct op_def *optable_rows(size_t *n);

#endif
