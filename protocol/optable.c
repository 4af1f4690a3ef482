/* optable.c - the operation table (optable.h) and the one matching
 * function that top-level requests and $batch parts both go through. */
#include "protocol/optable.h"

#include <string.h>

#include "protocol/ctx.h"

/* Flags shared by the entity writes. */
#define ENTITY_WRITE (OPF_WRITES | OPF_BODY_ENTITY | OPF_CHANGESET)

/* Rights (struct auth_need: which SAS letters and resource types an
 * operation needs, doc/protocol.md, Account SAS; Table SAS), under the REST API's name of
 * the operation (refusal explanations). */
#define ADD_UPDATE (AUTH_P_ADD | AUTH_P_UPDATE)
#define RAUD (AUTH_P_READ | AUTH_P_ADD | AUTH_P_UPDATE | AUTH_P_DELETE)
/* tables: through an account SAS only */
#define NEED_TABLES(nm, w, all, any)                                                           \
    {.name = nm, .write = (w), .rt_any = AUTH_RT_CONTAINER, .acct_all = (all),               \
     .acct_any = (any), .table_denied = 1}
/* service properties and stats: through an account SAS only */
#define NEED_SERVICE(nm, w, all)                                                               \
    {.name = nm, .write = (w), .rt_any = AUTH_RT_SERVICE, .acct_all = (all),                 \
     .table_denied = 1}
/* entities: the letters p through either kind of SAS (upserts need a and
   u: doc/protocol.md, Account SAS) */
#define NEED_ENTITY(nm, w, p)                                                                  \
    {.name = nm, .write = (w), .rt_any = AUTH_RT_OBJECT, .acct_all = (p), .table_all = (p)}
/* a collection query accepts srt c as well as o (doc/protocol.md, Account SAS) */
#define NEED_QUERY_ENTITIES                                                                    \
    {.name = "QueryEntities", .rt_any = AUTH_RT_CONTAINER | AUTH_RT_OBJECT,                 \
     .acct_all = AUTH_P_READ, .table_all = AUTH_P_READ}
/* the $batch envelope needs some entity right; each part is then checked
   with its own operation's (doc/protocol.md, Batch execution) */
#define NEED_BATCH                                                                             \
    {.name = "EntityGroupTransaction", .write = 1, .rt_any = AUTH_RT_OBJECT,                \
     .acct_any = RAUD, .table_any = RAUD}
/* ACLs belong to the account owner (doc/protocol.md, Get Table ACL): no SAS at all */
#define NEED_OWNER(nm, w) {.name = nm, .write = (w), .acct_denied = 1, .table_denied = 1}

/* The row of an entity write: route, rights (the letters p), cost, what
 * it does in the store's terms and the advisor's name for it. */
#define ENTITY_ROW(o, nm, res_, m, fl, p, cost_, in, adv)                                      \
    [o] = {.op = o, .name = nm, .res = res_, .methods = m, .flags = ENTITY_WRITE | (fl),     \
           .auth = NEED_ENTITY(nm, 1, p), .fault = FAULT_WRITE, .cost = cost_,               \
           .handler = op_write, .intent = in, .advise = adv}

/* Indexed by enum op (a second row for one op does not compile under
 * -Werror=override-init; a missing one has op OP_NONE: test_route). */
static const struct op_def rows[OP_COUNT] = {
    [OP_QUERY_TABLES] = {.op = OP_QUERY_TABLES, .name = "QueryTables", .res = RES_TABLES,
                         .methods = OPM_READ, .flags = OPF_BODY,
                         .auth = NEED_TABLES("QueryTables", 0, AUTH_P_LIST, 0),
                         .fault = FAULT_READ, .cost = OP_COST_ONE,
                         .handler = op_query_tables},
    [OP_GET_TABLE] = {.op = OP_GET_TABLE, .name = "GetTable", .res = RES_TABLE_ENTRY,
                      .methods = OPM_READ, .flags = OPF_BODY,
                      .auth = NEED_TABLES("QueryTables", 0, AUTH_P_LIST, 0),
                      .fault = FAULT_READ, .cost = OP_COST_ONE, .handler = op_get_table},
    [OP_CREATE_TABLE] = {.op = OP_CREATE_TABLE, .name = "CreateTable", .res = RES_TABLES,
                         .methods = OPM(HTTP_M_POST),
                         .flags = OPF_WRITES | OPF_BODY | OPF_BODY_ENTITY | OPF_PREFER,
                         .auth = NEED_TABLES("CreateTable", 1, 0, AUTH_P_CREATE | AUTH_P_WRITE),
                         .fault = FAULT_WRITE, .cost = OP_COST_ONE,
                         .handler = op_create_table},
    [OP_DELETE_TABLE] = {.op = OP_DELETE_TABLE, .name = "DeleteTable", .res = RES_TABLE_ENTRY,
                         .methods = OPM(HTTP_M_DELETE), .flags = OPF_WRITES,
                         .auth = NEED_TABLES("DeleteTable", 1, AUTH_P_DELETE, 0),
                         .fault = FAULT_WRITE, .cost = OP_COST_ONE,
                         .handler = op_delete_table},
    [OP_QUERY_ENTITIES] = {.op = OP_QUERY_ENTITIES, .name = "QueryEntities", .res = RES_TABLE,
                           .methods = OPM_READ, .flags = OPF_BODY | OPF_BATCH_QUERY,
                           .auth = NEED_QUERY_ENTITIES, .fault = FAULT_READ,
                           .cost = OP_COST_PER_ENTITY, .handler = op_query_entities},
    [OP_GET_ENTITY] = {.op = OP_GET_ENTITY, .name = "GetEntity", .res = RES_ENTITY,
                       .methods = OPM_READ, .flags = OPF_BODY | OPF_BATCH_QUERY,
                       .auth = NEED_ENTITY("GetEntity", 0, AUTH_P_READ), .fault = FAULT_READ,
                       .cost = OP_COST_ONE, .handler = op_get_entity},
    ENTITY_ROW(OP_INSERT_ENTITY, "InsertEntity", RES_TABLE, OPM(HTTP_M_POST),
               OPF_BODY | OPF_PREFER, AUTH_P_ADD, OP_COST_ONE_BODY_PK, STORE_INSERT,
               ADVISOR_INSERT),
    ENTITY_ROW(OP_UPDATE_ENTITY, "UpdateEntity", RES_ENTITY, OPM(HTTP_M_PUT), OPF_IF_MATCH,
               AUTH_P_UPDATE, OP_COST_ONE, STORE_REPLACE, ADVISOR_UPDATE),
    ENTITY_ROW(OP_INSERT_OR_REPLACE, "InsertOrReplaceEntity", RES_ENTITY, OPM(HTTP_M_PUT),
               OPF_NO_IF_MATCH, ADD_UPDATE, OP_COST_ONE, STORE_UPSERT, ADVISOR_UPSERT),
    ENTITY_ROW(OP_MERGE_ENTITY, "MergeEntity", RES_ENTITY, OPM_MERGE, OPF_IF_MATCH,
               AUTH_P_UPDATE, OP_COST_ONE, STORE_MERGE, ADVISOR_UPDATE),
    ENTITY_ROW(OP_INSERT_OR_MERGE, "InsertOrMergeEntity", RES_ENTITY, OPM_MERGE,
               OPF_NO_IF_MATCH, ADD_UPDATE, OP_COST_ONE, STORE_UPSERT_MERGE, ADVISOR_UPSERT),
    [OP_DELETE_ENTITY] = {.op = OP_DELETE_ENTITY, .name = "DeleteEntity", .res = RES_ENTITY,
                          .methods = OPM(HTTP_M_DELETE), .flags = OPF_WRITES | OPF_CHANGESET,
                          .auth = NEED_ENTITY("DeleteEntity", 1, AUTH_P_DELETE),
                          .fault = FAULT_WRITE, .cost = OP_COST_ONE, .handler = op_write,
                          .intent = STORE_DELETE, .advise = ADVISOR_DELETE},
    [OP_BATCH] = {.op = OP_BATCH, .name = "EntityGroupTransaction", .res = RES_BATCH,
                  .methods = OPM(HTTP_M_POST), .flags = OPF_WRITES | OPF_ENVELOPE,
                  .auth = NEED_BATCH, .fault = FAULT_BATCH, .cost = OP_COST_PER_OP,
                  .handler = op_batch},
    [OP_GET_ACL] = {.op = OP_GET_ACL, .name = "GetTableAcl", .res = RES_TABLE, .comp = "acl",
                    .methods = OPM_READ, .flags = OPF_XML,
                    .auth = NEED_OWNER("GetTableAcl", 0), .fault = FAULT_READ,
                    .cost = OP_COST_ONE, .handler = op_get_acl},
    [OP_SET_ACL] = {.op = OP_SET_ACL, .name = "SetTableAcl", .res = RES_TABLE, .comp = "acl",
                    .methods = OPM(HTTP_M_PUT), .flags = OPF_XML | OPF_WRITES,
                    .auth = NEED_OWNER("SetTableAcl", 1), .fault = FAULT_WRITE,
                    .cost = OP_COST_ONE, .handler = op_set_acl},
    [OP_GET_SERVICE_PROPERTIES] = {.op = OP_GET_SERVICE_PROPERTIES,
                                   .name = "GetServiceProperties", .res = RES_SERVICE,
                                   .comp = "properties", .restype = "service",
                                   .methods = OPM_READ, .flags = OPF_XML,
                                   .auth = NEED_SERVICE("GetTableServiceProperties", 0,
                                                        AUTH_P_READ),
                                   .fault = FAULT_READ, .cost = OP_COST_ONE,
                                   .handler = op_get_service_properties},
    [OP_SET_SERVICE_PROPERTIES] = {.op = OP_SET_SERVICE_PROPERTIES,
                                   .name = "SetServiceProperties", .res = RES_SERVICE,
                                   .comp = "properties", .restype = "service",
                                   .methods = OPM(HTTP_M_PUT), .flags = OPF_XML | OPF_WRITES,
                                   .auth = NEED_SERVICE("SetTableServiceProperties", 1,
                                                        AUTH_P_WRITE),
                                   .fault = FAULT_WRITE, .cost = OP_COST_ONE,
                                   .handler = op_set_service_properties},
    [OP_GET_SERVICE_STATS] = {.op = OP_GET_SERVICE_STATS, .name = "GetServiceStats",
                              .res = RES_SERVICE, .comp = "stats", .restype = "service",
                              .methods = OPM_READ, .flags = OPF_XML,
                              .auth = NEED_SERVICE("GetTableServiceStats", 0, AUTH_P_READ),
                              .fault = FAULT_READ, .cost = OP_COST_ONE,
                              .handler = op_get_service_stats},
    [OP_PREFLIGHT] = {.op = OP_PREFLIGHT, .name = "Preflight", .res = RES_NONE,
                      .methods = OPM(HTTP_M_OPTIONS), .flags = OPF_ANY_RESOURCE | OPF_BARE,
                      .auth = {.name = "PreflightTableRequest", .open = 1},
                      .fault = FAULT_READ, .cost = OP_COST_NONE, .handler = op_preflight},
};

#define ROW_FIRST 1  /* rows[0] is OP_NONE's empty slot */

/* Whether row r's comp requirement is met by comp (NULL: none sent). */
static int comp_is(const struct op_def *r, const char *comp)
{
    return comp ? r->comp && strcmp(r->comp, comp) == 0 : !r->comp;
}

/* Whether row r takes method m with If-Match present or not. */
static int verb_fits(const struct op_def *r, enum http_method m, int has_if_match)
{
    if (!(r->methods & OPM(m)))
        return 0;
    if ((r->flags & OPF_IF_MATCH) && !has_if_match)
        return 0;
    return !((r->flags & OPF_NO_IF_MATCH) && has_if_match);
}

/* Whether row r's restype requirement is met by restype. */
static int restype_is(const struct op_def *r, const char *restype)
{
    return !r->restype || (restype && strcmp(r->restype, restype) == 0);
}

/* The first row that takes the request: one for every resource whose verb
 * fits, or one of res whose comp (NULL: rows without comp), restype and
 * verb fit. This is the whole work of a request that names an operation. */
static const struct op_def *find(enum resource res, enum http_method m, const char *comp,
                                 const char *restype, int has_if_match)
{
    for (const struct op_def *r = rows + ROW_FIRST; r < rows + OP_COUNT; r++) {
        if (r->flags & OPF_ANY_RESOURCE) {
            if (r->methods & OPM(m))
                return r;
            continue;
        }
        if (r->res == res && comp_is(r, comp) && restype_is(r, restype) &&
            verb_fits(r, m, has_if_match))
            return r;
    }
    return NULL;
}

/* Whether res has rows that need a comp (so a comp chooses among them;
 * elsewhere it is ignored). */
static int uses_comp(enum resource res)
{
    for (const struct op_def *r = rows + ROW_FIRST; r < rows + OP_COUNT; r++)
        if (r->res == res && r->comp && !(r->flags & OPF_ANY_RESOURCE))
            return 1;
    return 0;
}

/* Why no row takes the request, in the order the service checks (doc/protocol.md,
 * Routing table): the resource, its comp (where it has comp rows), restype, then the
 * verb (and If-Match). Sets *xml: whether the error is storage XML (all
 * the rows the comp, or its absence, leaves are XML ones). */
static enum terr why_not(enum resource res, const char *comp, const char *restype, int *xml)
{
    int nres = 0, all_xml = 1;
    *xml = 0;
    for (const struct op_def *r = rows + ROW_FIRST; r < rows + OP_COUNT; r++) {
        if (r->res != res || (r->flags & OPF_ANY_RESOURCE))
            continue;
        nres++;
        all_xml &= (r->flags & OPF_XML) != 0;
    }
    if (nres == 0)
        return TERR_InvalidUri;
    int want_comp = comp && uses_comp(res);
    int ngroup = 0, group_xml = 1, ncomp = 0, restype_bad = 0;
    for (const struct op_def *r = rows + ROW_FIRST; r < rows + OP_COUNT; r++) {
        if (r->res != res || (r->flags & OPF_ANY_RESOURCE) || (r->comp != NULL) != want_comp)
            continue;
        ngroup++;
        group_xml &= (r->flags & OPF_XML) != 0;
        if (want_comp && !comp_is(r, comp))
            continue;
        ncomp++;
        restype_bad |= !restype_is(r, restype);
    }
    *xml = ngroup ? group_xml : all_xml;
    if (ngroup == 0)
        return TERR_InvalidUri;  /* e.g. the service root without comp */
    if (ncomp == 0 || restype_bad)
        return TERR_InvalidQueryParameterValue;
    return *xml ? TERR_UnsupportedHttpVerb : TERR_MethodNotAllowed;
}

const struct op_def *optable_match(enum resource res, enum http_method m, const char *comp,
                                   const char *restype, int has_if_match,
                                   enum optable_from from, int *xml, enum terr *err)
{
    int part = from == OPTABLE_PART;
    int xml_ignored;
    if (!xml)
        xml = &xml_ignored;
    *err = TERR_NONE;
    if (part)
        comp = NULL;
    const struct op_def *r = part && m == HTTP_M_HEAD ? NULL
                                                      : find(res, m, comp, restype, has_if_match);
    if (!r && comp && !part && !uses_comp(res))
        r = find(res, m, NULL, restype, has_if_match);  /* a comp res has no use for */
    if (r && (!part || (r->flags & (OPF_CHANGESET | OPF_BATCH_QUERY)))) {
        *xml = (r->flags & OPF_XML) != 0;
        return r;
    }
    *err = why_not(res, comp, restype, xml);
    if (part) {
        *xml = 0;
        *err = TERR_InvalidInput;
    }
    return NULL;
}

int optable_answer_body(const struct req_ctx *c)
{
    return (c->def->flags & OPF_BODY) &&
           !(c->prefer && strcmp(c->prefer, "return-no-content") == 0);
}

const struct op_def *optable_get(enum op op)
{
    if ((unsigned)op < ROW_FIRST || (unsigned)op >= OP_COUNT)
        return NULL;
    return &rows[op];
}

const char *optable_name(enum op op)
{
    const struct op_def *d = optable_get(op);
    return d && d->name ? d->name : "Unrouted";
}

const struct op_def *optable_rows(size_t *n)
{
    *n = OP_COUNT - ROW_FIRST;
    return rows + ROW_FIRST;
}
