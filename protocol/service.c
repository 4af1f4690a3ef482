/* service.c - the request pipeline of the Table service: request id and
 * version, account and route, verb tunnelling, content negotiation,
 * dispatch to an operation, common headers (doc/architecture.md, Data flow of one request). */
#include "protocol/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/clock.h"
#include "core/coro.h"
#include "guard/fault.h"
#include "core/heap.h"
#include "core/jsonpeek.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/rand.h"
#include "guard/throttle.h"
#include "codec/acl.h"
#include "protocol/authlog.h"
#include "protocol/ctx.h"
#include "codec/edm.h"
#include "filter/filter.h"
#include "store/keys.h"
#include "codec/multipart.h"
#include "protocol/ops/ops_props.h"
#include "protocol/optable.h"
#include "store/store.h"
#include "protocol/route.h"
#include "protocol/version.h"

/* Every operation has its metrics slot. */
_Static_assert(OP_COUNT <= METRICS_MAX_OPS, "core/metrics.h counts fewer operations");

/* The lent value buffer keeps its capacity up to this size. */
#define SERVICE_BUF_KEEP_BYTES (1u << 20)

/* Largest request body of any operation (doc/protocol.md, Body size limits). */
#define PROTOCOL_MAX_BODY (4u << 20)

/* A request running on its own coroutine (a store whose calls complete
 * later): its answer is handed over by done(token) once it is complete. */
struct service_job {
    struct service *svc;
    /* what the coroutine runs: service_run, or service_run_import */
    void (*run)(struct service *svc, struct request *req, struct response *resp);
    struct request *req;
    struct response *resp;
    void (*done)(void *token);
    void *token;
    int *finished_now;         /* set while the first resume runs */
    struct coro *co;
    struct service_job *prev, *next;   /* svc->jobs: the requests waiting */
};

/* A complete answer held for the pipelined group commit (store_hold):
 * handed over by done(token) once the sync covering it is over. */
struct service_hold {
    struct store_waiter w;     /* first: the store hands back &w */
    struct service *svc;
    struct request *req;
    struct response *resp;
    void (*done)(void *token);
    void *token;
};

static unsigned account_index(const struct req_ctx *c);
static void service_wake_cb(void *arg);
static void service_refuse(struct service *svc, struct request *req, struct response *resp,
                           enum terr terr);

struct service *service_new(const struct service_settings *cfg, struct store *store,
                            char *err, size_t errlen)
{
    struct service *svc = calloc(1, sizeof *svc);
    if (!svc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    svc->set = *cfg;
    svc->store = store;
    store_set_wake(store, service_wake_cb, svc);
    svc->cat = catalog_open(store, service_wake_cb, svc, err, errlen);
    if (!svc->cat) {
        free(svc);
        return NULL;
    }
    svc->shared = catalog_shared(svc->cat);
    rand_x128_seed(&svc->rng, 0);
    buf_init(&svc->kbuf);
    buf_init(&svc->vbuf);
    svc->auth.accounts = cfg->accounts;
    svc->auth.naccounts = cfg->naccounts;
    svc->auth.disabled = !cfg->auth;
    svc->auth.bearer_basic = cfg->oauth_basic;
    svc->auth.version_known = cfg->strict_versions ? version_sas_strict : version_sas_lenient;
    svc->auth.policy_lookup = acl_policy_lookup;
    svc->auth.policy_arg = svc;
    svc->auth.cache = auth_cache_new();
    svc->url_memo = url_memo_new();
    return svc;
}

void service_quiesce(struct service *svc, void (*wait_once)(void *arg), void *arg, int max_ms)
{
    svc->quiescing = 1;
    uint64_t until = clock_mono_us() + (uint64_t)max_ms * 1000u;
    while ((svc->jobs || svc->bg_running || store_holding(svc->store)) &&
           clock_mono_us() < until)
        wait_once(arg);
    if (svc->jobs || svc->bg_running || store_holding(svc->store))
        log_warn("stopping with requests still waiting on the store after %d ms", max_ms);
}

void service_free(struct service *svc)
{
    if (!svc)
        return;
    auth_cache_free(svc->auth.cache);
    props_cache_free(svc->props);
    url_memo_free(svc->url_memo);
    if (svc->bg_running)
        coro_free(svc->bg_co);
    /* requests still waiting on storage at shutdown are dropped */
    store_drop_waiters(svc->store);   /* their holds are in their arenas */
    while (svc->jobs) {
        struct service_job *j = svc->jobs;
        svc->jobs = j->next;
        coro_free(j->co);
        free(j);
    }
    catalog_free(svc->cat);
    catalog_free(svc->sec_cat);
    buf_free(&svc->kbuf);
    buf_free(&svc->vbuf);
    free(svc);
}


int service_dirty(const struct service *svc)
{
    return store_dirty(svc->store);
}

/* Asks core/ for a service_background() call soon. */
static void service_wake(struct service *svc)
{
    if (svc->wake)
        svc->wake(svc->wake_arg);
}

/* service_wake as a callback: the store failed or recovered (a background
 * step probes it, or resumes the purges that waited for it), or the
 * backend reclaimed a purged range and store/reclaim.c counted the memory
 * it freed (a background step gives it back when it is due). */
static void service_wake_cb(void *arg)
{
    service_wake(arg);
}

int service_sync(struct service *svc)
{
    return store_sync(svc->store);
}

int service_table_with(struct req_ctx *c, const struct table_info **out, const void *key,
                       size_t key_len, void **val, size_t *len, int *found)
{
    return catalog_table_with(ctx_read_cat(c), c->a, c->account->name, c->table, c->table_len, out,
                              key, key_len, val, len, found);
}

int service_table(struct req_ctx *c, const char *name, size_t name_len,
                  const struct table_info **out)
{
    return catalog_table(ctx_read_cat(c), c->a, c->account->name, name, name_len, out);
}

struct store *ctx_read_store(const struct req_ctx *c)
{
    return c->secondary && c->svc->sec_store ? c->svc->sec_store : c->svc->store;
}

struct catalog *ctx_read_cat(const struct req_ctx *c)
{
    return c->secondary && c->svc->sec_cat ? c->svc->sec_cat : c->svc->cat;
}

int service_set_secondary(struct service *svc, struct store *store, char *err, size_t errlen)
{
    struct catalog *cat = catalog_open_reader(store);
    if (!cat) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    catalog_free(svc->sec_cat);
    svc->sec_store = store;
    svc->sec_cat = cat;
    return 0;
}

enum terr ctx_table(struct req_ctx *c, const struct table_info **out)
{
    int rc = service_table(c, c->table, c->table_len, out);
    if (rc == STORE_OK)
        return TERR_NONE;
    return rc == STORE_NOTFOUND ? TERR_TableNotFound : terr_from_store(rc);
}

/* Random version-4 UUID text into out (>= 37 bytes). */
void service_uuid(struct service *svc, char out[40])
{
    uint8_t g[16];
    uint64_t a = rand_x128_next(&svc->rng), b = rand_x128_next(&svc->rng);
    memcpy(g, &a, 8);
    memcpy(g + 8, &b, 8);
    g[6] = (uint8_t)((g[6] & 0x0f) | 0x40);
    g[8] = (uint8_t)((g[8] & 0x3f) | 0x80);
    edm_guid_format(g, out);
}

/* Sets up the context common to every request. */
static void ctx_init(struct req_ctx *c, struct service *svc, struct request *req,
                     struct response *resp)
{
    memset(c, 0, sizeof *c);
    c->svc = svc;
    c->req = req;
    c->resp = resp;
    c->a = req->arena;
    c->method = req->method;
    c->version = version_newest();
    c->level = ODATA_MINIMAL;
    const char *v = request_header(req, "x-ms-version");
    const char *k = version_behaviour(&svc->version_memo, v, svc->set.strict_versions);
    if (k) {
        c->version = k;
        c->version_echo = v;
    }
    c->odata = 1; /* JSON errors until an XML operation is recognised */
    service_uuid(svc, c->request_id);
}

/* Applies X-HTTP-Method tunnelling (doc/protocol.md, Routing table). */
static enum terr tunnel_method(struct req_ctx *c)
{
    size_t n = request_header_count(c->req, "X-HTTP-Method");
    if (n == 0)
        return TERR_NONE;
    if (c->req->method != HTTP_M_POST)
        return TERR_XMethodNotUsingPost;
    const char *v = request_header(c->req, "X-HTTP-Method");
    if (n > 1 || strchr(v, ','))
        return TERR_XMethodIncorrectCount;
    if (strcmp(v, "PUT") == 0)
        c->method = HTTP_M_PUT;
    else if (strcmp(v, "MERGE") == 0)
        c->method = HTTP_M_MERGE;
    else if (strcmp(v, "DELETE") == 0)
        c->method = HTTP_M_DELETE;
    else
        return TERR_XMethodIncorrectValue;
    return TERR_NONE;
}

/* Picks the operation's row from verb, resource and query (doc/protocol.md, Routing table);
 * the table also says whether the answer is storage XML, errors too. */
static enum terr match_op(struct req_ctx *c)
{
    const struct query_param *comp = url_query_get(c->qp, c->nqp, "comp");
    const struct query_param *restype = url_query_get(c->qp, c->nqp, "restype");
    int xml;
    enum terr e;
    const struct op_def *d =
        optable_match(c->res, c->method, comp ? comp->value : NULL,
                      restype ? restype->value : NULL, request_header(c->req, "If-Match") != NULL,
                      OPTABLE_REQUEST, &xml, &e);
    if (xml)
        c->odata = 0;
    if (!d)
        return e;
    c->def = d;
    c->op = d->op;
    return TERR_NONE;
}

/* OData query options the service does not support (doc/protocol.md, Query parameters; Query errors). */
static int unsupported_option(const struct req_ctx *c)
{
    static const char *const opts[] = {"$orderby", "$skip", "$expand", "$inlinecount",
                                       "$count", "$skiptoken", "$search"};
    for (size_t i = 0; i < c->nqp; i++) {
        if (c->qp[i].name[0] != '$')  /* as every one of opts: most are SAS fields */
            continue;
        for (size_t j = 0; j < sizeof opts / sizeof opts[0]; j++)
            if (strcasecmp(c->qp[i].name, opts[j]) == 0)
                return 1;
    }
    return 0;
}

/* Sets the effective version from the value v a request sent; refuses a
 * version the service would not take (doc/protocol.md, Service versions, version_behaviour). */
static enum terr use_version(struct req_ctx *c, const char *v)
{
    const char *k = version_behaviour(&c->svc->version_memo, v, c->svc->set.strict_versions);
    if (!k)
        return TERR_InvalidHeaderValue;
    c->version = k;
    c->version_echo = v;
    return TERR_NONE;
}

/* Version of the request (doc/protocol.md, Service versions). A request authorized by a SAS (sig
 * in the query and no Authorization header, as auth_check tells them
 * apart) runs at its api-version, else at its signed version sv; its
 * x-ms-version header is ignored ("Versioning for Azure Storage": the
 * optional api-version gives the version that executes the operation, sv
 * the one that authorizes it and also executes it when api-version is
 * absent; "Previous Azure Storage service versions": an x-ms-version
 * header on a SAS request is ignored). So legacy SDKs sending both
 * headers, equal or not, are answered, never MultipleVersionsSpecified.
 * An sv that is not a usable version is left to the SAS check (403).
 * Other requests: x-ms-version, or api-version, not both. */
static enum terr pick_version(struct req_ctx *c)
{
    const struct query_param *api = url_query_get(c->qp, c->nqp, "api-version");
    if (!request_header(c->req, "Authorization") && url_query_get(c->qp, c->nqp, "sig")) {
        if (api)
            return use_version(c, api->value);
        const struct query_param *sv = url_query_get(c->qp, c->nqp, "sv");
        if (sv && version_behaviour(&c->svc->version_memo, sv->value,
                                      c->svc->set.strict_versions))
            return use_version(c, sv->value);
        c->version = version_newest();
        c->version_echo = NULL;
        return TERR_NONE;
    }
    size_t n = request_header_count(c->req, "x-ms-version");
    if (n > 1)
        return TERR_InvalidHeaderValue;
    if (n == 1 && api)
        return TERR_MultipleVersionsSpecified;
    const char *v = n ? request_header(c->req, "x-ms-version") : api ? api->value : NULL;
    return v ? use_version(c, v) : TERR_NONE;
}

void service_auth_op(struct req_ctx *c)
{
    struct auth_op *op = &c->aop;
    memset(op, 0, sizeof *op);
    op->need = &c->def->auth;
    if (c->res == RES_TABLE || c->res == RES_ENTITY || c->res == RES_TABLE_ENTRY)
        op->table = c->table;
    if (c->res == RES_ENTITY) {
        op->pk = c->pk;
        op->pk_len = c->pk_len;
        op->rk = c->rk;
        op->rk_len = c->rk_len;
    }
    op->secondary = c->secondary;
}

/* Authenticates and authorizes the routed request (doc/protocol.md, Authentication). */
static enum terr authenticate(struct req_ctx *c)
{
    service_auth_op(c);
    enum auth_status s = auth_check(&c->svc->auth, c->req, c->account->name, &c->aop, &c->auth);
    return terr_from_auth(s);
}

/* ---- throttling and fault injection (doc/protocol.md, Token buckets, guard/throttle.h,
 * guard/fault.h) ----
 *
 * Every operation is admitted right after authentication and content
 * negotiation, before any work: one token of its partition bucket (entity
 * operations) and of its account bucket; table, ACL and service calls cost
 * one account token. Entity operations name their partition in the URL;
 * an insert's PartitionKey is read from the JSON body with jsonpeek, which
 * stops at that member (a body without a readable one charges the account
 * only: the insert fails validation anyway). Batches and queries learn
 * their partition later and are admitted by service_batch_admit() and
 * service_query_admit(). Fault rules are consulted first: an injected
 * fault refuses the request without running it (or, for a timeout with
 * timeout-applies, runs it and then answers 500), and takes no tokens. */

/* Index of the request's account in the configuration. */
static unsigned account_index(const struct req_ctx *c)
{
    return (unsigned)(c->account - c->svc->set.accounts);
}

/* Consults the fault rules, then the buckets, for a request of c->op on
 * (table, pk) costing cost tokens (0: only check the buckets are not
 * empty). pk NULL: no partition (account bucket only). Returns the error
 * to answer, or TERR_NONE to go on. */
static enum terr guard(struct req_ctx *c, const char *table, size_t table_len, const char *pk,
                       size_t pk_len, int64_t cost)
{
    struct service *svc = c->svc;
    unsigned ai = account_index(c);
    c->guarded = 1;
    if (fault_active(svc->faults)) {
        struct fault_request q = {c->account->name, table, table_len, pk, pk_len,
                                  c->def->fault};
        struct fault_action a;
        if (fault_decide(svc->faults, &q, &a)) {
            c->resp->delay_ms = a.delay_ms;
            switch (a.kind) {
            case FAULT_RESET:
                metrics_fault(svc->metrics, ai, METRICS_FAULT_RESET);
                c->resp->reset = 1;
                return TERR_ServerBusy;  /* never sent: the connection is reset */
            case FAULT_BUSY:
                metrics_fault(svc->metrics, ai, METRICS_FAULT_BUSY);
                return TERR_ServerBusy;
            case FAULT_TIMEOUT:
                metrics_fault(svc->metrics, ai, METRICS_FAULT_TIMEOUT);
                if (!a.applies_write)
                    return TERR_OperationTimedOut;
                c->timeout_after = 1;
                break;
            default:
                metrics_fault(svc->metrics, ai, METRICS_FAULT_LATENCY);
                break;
            }
        }
    }
    if (svc->throttle) {
        struct throttle_key k = {ai, table, table_len, pk, pk_len};
        int64_t acost =
            c->def->cost == OP_COST_PER_OP && svc->set.throttle_batch_per_request && cost > 0
                ? 1 : cost;
        enum throttle_verdict v = throttle_admit(svc->throttle, &k, cost, acost, clock_mono_us());
        if (v != THROTTLE_OK) {
            c->throttled = 1;
            c->timeout_after = 0;
            metrics_throttled(svc->metrics, ai, v == THROTTLE_PARTITION ? METRICS_SCOPE_PARTITION
                                                                        : METRICS_SCOPE_ACCOUNT);
            if (svc->advisor)
                service_advise_throttled(c, table, table_len,
                                         v == THROTTLE_PARTITION ? pk : NULL, pk_len);
            return v == THROTTLE_PARTITION ? TERR_ServerBusyPartition : TERR_ServerBusyAccount;
        }
    }
    return TERR_NONE;
}

/* Admits an operation whose partition the URL or an insert body names. */
static enum terr guard_request(struct req_ctx *c)
{
    const char *pk = NULL;
    size_t pk_len = 0;
    if (c->res == RES_ENTITY) {
        pk = c->pk;
        pk_len = c->pk_len;
    } else if (c->def->cost == OP_COST_ONE_BODY_PK && c->req->body &&
               !jsonpeek_string(c->a, c->req->body, c->req->body_len, "PartitionKey", &pk,
                                &pk_len)) {
        pk = NULL;
    }
    int table = c->res == RES_TABLE || c->res == RES_ENTITY || c->res == RES_TABLE_ENTRY;
    return guard(c, table ? c->table : NULL, table ? c->table_len : 0, pk, pk_len, 1);
}

enum terr service_batch_admit(struct req_ctx *c, const struct req_ctx *sub,
                              const struct multipart_op *op, size_t n)
{
    if (!c->svc->throttle && !fault_active(c->svc->faults))
        return TERR_NONE;
    const char *pk = NULL;
    size_t pk_len = 0;
    if (sub->res == RES_ENTITY) {
        pk = sub->pk;
        pk_len = sub->pk_len;
    } else if (op->body && !jsonpeek_string(c->a, op->body, op->body_len, "PartitionKey", &pk,
                                            &pk_len)) {
        pk = NULL;
    }
    return guard(c, sub->table, sub->table_len, pk, pk_len, (int64_t)n);
}

enum terr service_query_admit(struct req_ctx *c, const struct filter_plan *plan)
{
    c->run_pk = NULL;
    c->run_n = c->page_n = 0;
    if (c->guarded || (!c->svc->throttle && !fault_active(c->svc->faults)))
        return TERR_NONE;
    /* A plan inside one partition names it; otherwise only the account
     * bucket is checked up front. */
    const char *pk = NULL;
    size_t pk_len = 0;
    for (size_t i = 0; i < plan->n; i++) {
        const struct filter_range *r = &plan->ranges[i];
        if (r->lo.unbounded || r->hi.unbounded || r->lo.pk_len != r->hi.pk_len ||
            memcmp(r->lo.pk, r->hi.pk, r->lo.pk_len) != 0 ||
            (i > 0 && (r->lo.pk_len != pk_len || memcmp(r->lo.pk, pk, pk_len) != 0))) {
            pk = NULL;
            break;
        }
        pk = r->lo.pk;
        pk_len = r->lo.pk_len;
    }
    return guard(c, c->table, c->table_len, pk, pk_len, 0);
}

/* Charges the current run of one partition's entities. */
static void charge_run(struct req_ctx *c)
{
    if (c->run_n > 0) {
        struct throttle_key k = {account_index(c), c->table, c->table_len, c->run_pk,
                                 c->run_pk_len};
        throttle_charge(c->svc->throttle, &k, c->run_n, 0, clock_mono_us());
    }
    c->run_n = 0;
}

void service_query_entity(struct req_ctx *c, const char *pk, size_t pk_len)
{
    if (!c->svc->throttle)
        return;
    c->page_n++;
    if (c->run_n > 0 && c->run_pk_len == pk_len && memcmp(c->run_pk, pk, pk_len) == 0) {
        c->run_n++;
        return;
    }
    charge_run(c);
    c->run_pk = arena_strndup(c->a, pk, pk_len);
    c->run_pk_len = pk_len;
    c->run_n = 1;
}

void service_query_done(struct req_ctx *c)
{
    if (!c->svc->throttle)
        return;
    charge_run(c);
    struct throttle_key k = {account_index(c), c->table, c->table_len, NULL, 0};
    throttle_charge(c->svc->throttle, &k, 0, c->page_n > 0 ? c->page_n : 1, clock_mono_us());
}

/* The log's reason for a request whose URL names no configured account:
 * the configured names, and where the name was looked for. A path-style
 * first segment that is a resource ("Tables", "mytable()") means the URL
 * left the account out. */
static void unknown_account_why(struct req_ctx *c)
{
    const struct service_settings *cfg = &c->svc->set;
    struct buf names;
    buf_init(&names);
    for (size_t i = 0; i < cfg->naccounts && names.len < 512; i++)
        buf_printf(&names, "%s'%s'", i ? ", " : "", cfg->accounts[i].name);
    const char *tried = c->account_tried ? c->account_tried : "";
    int resource = c->path_style && (strncasecmp(tried, "Tables", 6) == 0 ||
                                     strchr(tried, '(') || strcmp(tried, "$batch") == 0);
    c->auth.why = resource ? AUTH_WHY_NO_ACCOUNT : AUTH_WHY_UNKNOWN_ACCOUNT;
    if (resource)
        c->auth.why_text = arena_sprintf(c->a,
                                         "the path names no account: its first segment '%.64s' is "
                                         "a resource; path-style URLs are "
                                         "http://HOST:PORT/ACCOUNT/... (configured: %s)",
                                         tried, names.len ? names.data : "none");
    else
        c->auth.why_text = arena_sprintf(c->a,
                                         "account '%.64s' (from the %s) is not configured "
                                         "(configured: %s)",
                                         tried,
                                         c->path_style ? "path's first segment"
                                                       : "first label of the Host header",
                                         names.len ? names.data : "none");
    buf_free(&names);
}

/* The pipeline up to dispatch; returns the error to answer, if any. */
static enum terr prepare(struct req_ctx *c)
{
    const struct request *req = c->req;
    if (req->body_len > PROTOCOL_MAX_BODY && c->req->method != HTTP_M_OTHER)
        return TERR_RequestBodyTooLargeLimit;
    if (url_parse_query(c->svc->url_memo, c->a, req->query, req->query_len, &c->qp, &c->nqp) != 0)
        return TERR_InvalidInput;
    enum terr e = pick_version(c);
    if (e)
        return e;
    const char *cid = request_header(req, "x-ms-client-request-id");
    if (cid && strlen(cid) > 1024)
        return TERR_InvalidHeaderValue;
    const char *rest;
    size_t rest_len;
    if ((e = route_account(c, &rest, &rest_len))) {
        /* No key can sign for an account that does not exist (doc/protocol.md, SharedKey);
         * without authentication there is simply no such resource. */
        if (c->unknown_account && c->svc->set.auth) {
            c->auth.detail = "The account named in the request does not exist.";
            unknown_account_why(c);
            c->auth_failed = 1;
            return TERR_AuthenticationFailed;
        }
        return e;
    }
    if ((e = route_resource(c, rest, rest_len)))
        return e;
    if ((e = tunnel_method(c)))
        return e;
    if ((e = match_op(c)))
        return e;
    unsigned f = c->def->flags;
    if (f & OPF_BARE)
        return TERR_NONE;
    if ((e = authenticate(c))) {
        c->auth_failed = 1;
        return e;
    }
    if (c->secondary && (f & OPF_WRITES))
        return TERR_InsufficientAccountPermissions;
    if (c->odata) {
        const char *ct = request_header(req, "Content-Type");
        if (ct && req->body_len && !(f & OPF_ENVELOPE) &&
            (strcasestr(ct, "atom") || strcasestr(ct, "/xml"))) {
            /* An Atom body: read as the JSON it stands for where the
             * version serves Atom (codec/atom.h), else 415. */
            if (!odata_atom_allowed(c))
                return TERR_AtomFormatNotSupported;
            if ((f & OPF_BODY_ENTITY) && (e = odata_atom_body(c, c->req)))
                return e;
        }
        if (f & OPF_PREFER)
            odata_prefer(c);
        /* A $batch envelope's Accept neither picks the batch's format nor
         * refuses it (the legacy Node SDK sends an Atom Accept around JSON
         * parts, and the service answers 202); each part negotiates its
         * own (ops_batch.c). A JSON level it names is the parts' fallback. */
        if ((e = odata_negotiate(c, optable_answer_body(c))) && !(f & OPF_ENVELOPE))
            return e;
        if (unsupported_option(c))
            return TERR_NotImplemented;
    }
    if ((c->svc->throttle || fault_active(c->svc->faults)) &&
        (c->def->cost == OP_COST_ONE || c->def->cost == OP_COST_ONE_BODY_PK))
        return guard_request(c);
    return TERR_NONE;
}

/* Runs one request to its answer: prepare, dispatch, common headers,
 * metrics. On a deferred store this runs on the request's coroutine. */
static void service_run(struct service *svc, struct request *req, struct response *resp)
{
    struct req_ctx c;
    struct buf kbuf, vbuf;
    ctx_init(&c, svc, req, resp);
    /* The service's encoding buffers keep their capacity across requests
     * (a $batch encodes ~100 KiB); they are lent to one request at a time,
     * and a request that runs while another waits on storage with them
     * gets its own. */
    int lent = !svc->bufs_lent;
    if (lent) {
        svc->bufs_lent = 1;
        c.kbuf = &svc->kbuf;
        c.vbuf = &svc->vbuf;
    } else {
        buf_init(&kbuf);
        buf_init(&vbuf);
        c.kbuf = &kbuf;
        c.vbuf = &vbuf;
    }
    enum terr e = prepare(&c);
    if (e && c.auth_failed)
        reply_auth_error(&c, e);
    else if (e)
        reply_error(&c, e);
    else
        c.def->handler(&c);
    if (c.timeout_after)  /* injected timeout after the write ran */
        reply_error(&c, TERR_OperationTimedOut);
    reply_finish(&c);
    if (c.throttled && svc->set.throttle_retry_after)
        response_headerf(resp, "Retry-After", "%d", svc->set.throttle_retry_after);
    op_cors_headers(&c);
    if (svc->metrics || svc->advisor) {
        uint64_t now = clock_mono_us();
        /* a point read, found or not (but not of a missing table) */
        if (svc->advisor && c.op == OP_GET_ENTITY &&
            (resp->status == 200 ||
             (resp->status == 404 &&
              catalog_known(svc->cat, c.account->name, c.table, c.table_len))))
            service_advise_read(&c, now);
        if (svc->metrics)
            metrics_request(svc->metrics, c.op, optable_name(c.op), resp->reset ? 0 : resp->status,
                            now - req->start_us);
    }
    if (lent) {
        svc->bufs_lent = 0;
        if (svc->vbuf.cap > SERVICE_BUF_KEEP_BYTES)
            buf_free(&svc->vbuf);   /* a big batch's buffer is not kept */
    } else {
        buf_free(&kbuf);
        buf_free(&vbuf);
    }
}

/* A held answer whose sync failed: the service's error instead (the write
 * may or may not survive a crash), and the connection is closed after it. */
static void service_fail_held(struct service *svc, struct request *req, struct response *resp,
                              int rc)
{
    struct arena *a = resp->arena;
    int no_body = resp->no_body;
    response_free(resp);
    response_init(resp, a);
    resp->no_body = no_body;
    struct req_ctx c;
    ctx_init(&c, svc, req, resp);
    reply_error(&c, terr_from_store(rc));
    reply_finish(&c);
    resp->close = 1;
}

/* The store's callback: the sync covering a held answer is over. */
static void service_hold_over(struct store_waiter *w, int status)
{
    struct service_hold *h = (struct service_hold *)w;
    if (status != STORE_OK)
        service_fail_held(h->svc, h->req, h->resp, status);
    h->done(h->token);         /* frees h with the request's arena */
}

/* A complete answer, with the pipelined group commit: 1 when it may go
 * now (resp replaced by an error when a sync failed at once), 0 when it
 * is held and done(token) follows once the writes it may show are
 * durable (see store.h). */
static int service_answer(struct service *svc, struct request *req, struct response *resp,
                          void (*done)(void *token), void *token)
{
    if (!store_pipelined(svc->store) || store_synced(svc->store))
        return 1;
    /* in the request's arena: it lives until the answer has been sent */
    struct service_hold *h = arena_alloc(resp->arena, sizeof *h);
    *h = (struct service_hold){{service_hold_over, 0, 0, NULL}, svc, req, resp, done, token};
    int rc = store_hold(svc->store, &h->w);
    if (rc < 0)
        service_fail_held(svc, req, resp, rc);
    return rc <= 0;
}

/* The coroutine's body. */
static void service_job_run(void *arg)
{
    struct service_job *j = arg;
    j->run(j->svc, j->req, j->resp);
}

/* Runs an import request of the admin listener (protocol/ops/ops_import.c)
 * with a context of its own: no account, route or authentication (the
 * admin listener checked its token), the service's encoding buffers. */
static void service_run_import(struct service *svc, struct request *req, struct response *resp)
{
    struct req_ctx c;
    struct buf kbuf, vbuf;
    ctx_init(&c, svc, req, resp);
    buf_init(&kbuf);
    buf_init(&vbuf);
    c.kbuf = &kbuf;
    c.vbuf = &vbuf;
    op_import(&c);
    buf_free(&kbuf);
    buf_free(&vbuf);
}

/* After the coroutine (main stack): hands the answer over. */
static void service_job_fin(void *arg)
{
    struct service_job *j = arg;
    if (j->prev)
        j->prev->next = j->next;
    else
        j->svc->jobs = j->next;
    if (j->next)
        j->next->prev = j->prev;
    if (j->finished_now)
        *j->finished_now = 1;
    else if (service_answer(j->svc, j->req, j->resp, j->done, j->token))
        j->done(j->token);
    free(j);
}

/* After a failed sync: the writes it covered may have been dropped (a
 * created or deleted table among them), so the table cache and the queue
 * of purges are read again from the store; a purge queued by a Delete
 * Table that was dropped would otherwise remove the entities of a table
 * that still exists. Only while no request waits on the store (they hold
 * pointers into the cache); tried again at the next request or background
 * step when that, or reading the store, fails. */
static void service_resync(struct service *svc)
{
    catalog_resync(svc->cat, svc->jobs != NULL);
}

/* Runs run(svc, req, resp) to its answer: at once on a store whose calls
 * complete at once, else on a coroutine of its own (service_handle). */
static int service_start(struct service *svc,
                         void (*run)(struct service *, struct request *, struct response *),
                         struct request *req, struct response *resp,
                         void (*done)(void *token), void *token)
{
    svc->requests++;
    service_resync(svc);
    if (!store_defers(svc->store) || !done || coro_current()) {
        run(svc, req, resp);
        return done ? service_answer(svc, req, resp, done, token) : 1;
    }
    struct service_job *j = calloc(1, sizeof *j);
    struct coro *co = j ? coro_new(service_job_run, service_job_fin, j) : NULL;
    if (!co) {
        free(j);
        service_refuse(svc, req, resp, TERR_ServerBusy);   /* out of memory */
        return 1;
    }
    int finished_now = 0;
    *j = (struct service_job){svc, run, req, resp, done, token, &finished_now, co, NULL,
                              svc->jobs};
    if (svc->jobs)
        svc->jobs->prev = j;
    svc->jobs = j;
    coro_resume(co);
    if (finished_now)
        return service_answer(svc, req, resp, done, token);
    j->finished_now = NULL;   /* it waits: done() will say when it is over */
    return 0;
}

int service_handle(struct service *svc, struct request *req, struct response *resp,
                   void (*done)(void *token), void *token)
{
    return service_start(svc, service_run, req, resp, done, token);
}

int service_import(struct service *svc, struct request *req, struct response *resp,
                   void (*done)(void *token), void *token)
{
    return service_start(svc, service_run_import, req, resp, done, token);
}

void service_error(struct service *svc, struct request *req, struct response *resp,
                   enum http_fail why)
{
    service_refuse(svc, req, resp, terr_from_http_fail(why));
}

/* Answers req with Table error terr before any operation ran. */
static void service_refuse(struct service *svc, struct request *req, struct response *resp,
                           enum terr terr)
{
    struct req_ctx c;
    ctx_init(&c, svc, req, resp);
    reply_error(&c, (enum terr)terr);
    reply_finish(&c);
    if (svc->metrics)
        metrics_request(svc->metrics, OP_NONE, optable_name(OP_NONE), resp->status,
                        clock_mono_us() - req->start_us);
    if (terr_info((enum terr)terr)->status >= 400 && (terr == TERR_RequestBodyTooLargeLimit ||
                                                      terr == TERR_RequestHeaderFieldsTooLarge))
        resp->close = 1;
}

void service_attach_advisor(struct service *svc, struct advisor *adv)
{
    svc->advisor = adv;
}

int service_attach(struct service *svc, struct throttle *t, struct fault_set *f,
                   struct metrics *m, char *err, size_t errlen)
{
    svc->throttle = t;
    svc->faults = f;
    svc->metrics = m;
    const struct service_settings *cfg = &svc->set;
    catalog_set_metrics(svc->cat, m);
    int rc = store_set_metrics(svc->store, m, cfg->accounts, cfg->naccounts, err, errlen);
    return rc != 0 ? -1 : 0;
}

void service_set_wake(struct service *svc, void (*wake)(void *arg), void *arg)
{
    svc->wake = wake;
    svc->wake_arg = arg;
    if (catalog_purges_pending(svc->cat) || store_failed(svc->store) || svc->shared)
        service_wake(svc);
}

/* How long no request may begin before freed memory is given back. */
#define GIVE_BACK_IDLE_MS 1000

/* After much was freed (the entities of deleted tables: core/heap.h),
 * gives the free heap back to the system once no request began for
 * GIVE_BACK_IDLE_MS: it takes 0.1-0.2 s for a GiB (the walk over the
 * heap, and mostly the kernel dropping the pages), which no request
 * should wait for. Returns the milliseconds
 * until the next look, or -1: nothing to give back. */
static int give_back_step(struct service *svc)
{
    if (!heap_give_back_due())
        return -1;
    uint64_t now = clock_mono_us();
    if (!svc->give_back_at_us || svc->requests != svc->give_back_seen) {
        svc->give_back_seen = svc->requests;
        svc->give_back_at_us = now + GIVE_BACK_IDLE_MS * 1000u;
    }
    if (now < svc->give_back_at_us)
        return (int)((svc->give_back_at_us - now + 999) / 1000);
    svc->give_back_at_us = 0;
    size_t given = heap_give_back();
    log_info("gave %zu MiB of freed memory back to the system in %.1f ms", given >> 20,
             (double)(clock_mono_us() - now) / 1000.0);
    return -1;
}

/* The earlier of two waits in milliseconds, where -1 is none. */
static int wait_min(int a, int b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* One background step (see service_background): the store's probe (while
 * it fails, and always on a shared store: /healthz), then a purge step,
 * and when no purge is left, the give-back of freed memory. */
static int service_background_step(struct service *svc)
{
    int idle = -1;   /* the wait when there is no purge to do */
    service_resync(svc);
    if (store_failed(svc->store) || svc->shared) {
        int wait_ms;
        if (!store_probe(svc->store, &wait_ms))
            return wait_ms;
        /* A backend may take no writes yet answer the probe (flatfile
           cannot tell a full disk): a pending purge step is the proof. */
        if (store_failed(svc->store) && !catalog_purges_pending(svc->cat))
            store_note(svc->store, STORE_OK, NULL);
        if (svc->shared) {
            idle = wait_ms;
            catalog_adopt(svc->cat);
        }
    }
    if (catalog_purges_pending(svc->cat)) {
        int ms = catalog_purge_step(svc->cat);
        if (ms >= 0)
            return ms;
    }
    return wait_min(idle, give_back_step(svc));
}

/* The background step on its coroutine (a deferred store). */
static void service_bg_run(void *arg)
{
    struct service *svc = arg;
    svc->bg_result = service_background_step(svc);
}

/* After it: when it had to wait, asks for the next call (at the time the
 * step asked for, which service_background keeps). */
static void service_bg_fin(void *arg)
{
    struct service *svc = arg;
    svc->bg_running = 0;
    svc->bg_co = NULL;
    if (svc->bg_waited) {
        if (svc->bg_result > 0)
            svc->bg_not_before_us = clock_mono_us() + (uint64_t)svc->bg_result * 1000u;
        if (svc->bg_result >= 0)
            service_wake(svc);
    }
}

int service_background(struct service *svc)
{
    if (svc->quiescing)
        return -1;
    if (!store_defers(svc->store))
        return service_background_step(svc);
    if (svc->bg_running)
        return -1;   /* the running step asks again when it is over */
    uint64_t now = clock_mono_us();
    if (now < svc->bg_not_before_us)
        return (int)((svc->bg_not_before_us - now + 999) / 1000);
    struct coro *co = coro_new(service_bg_run, service_bg_fin, svc);
    if (!co)
        return 1000;
    svc->bg_running = 1;
    svc->bg_waited = 0;
    svc->bg_co = co;
    if (coro_resume(co) == 1)
        return svc->bg_result;
    svc->bg_waited = 1;
    return -1;
}
