/* optable.c - the operation table (optable.h) and the one matching
 * function that top-level requests and $batch parts both go through. */
#include "protocol/optable.h"

#include <string.h>

#include "protocol/ctx.h"

/* Flags shared by the entity writes. */
#define ENTITY_WRITE (OPF_WRITES | OPF_BODY_ENTITY | OPF_CHANGESET)

/* Indexed by enum op (a second row for one op does not compile under
 * -Werror=override-init; a missing one has op OP_NONE: test_route). */
static const struct op_def rows[OP_COUNT] = {
    [OP_QUERY_TABLES] = {OP_QUERY_TABLES, "QueryTables", RES_TABLES, NULL, NULL, OPM_READ,
                         OPF_BODY, AUTH_OP_QUERY_TABLES, FAULT_READ, OP_COST_ONE,
                         op_query_tables},
    [OP_GET_TABLE] = {OP_GET_TABLE, "GetTable", RES_TABLE_ENTRY, NULL, NULL, OPM_READ, OPF_BODY,
                      AUTH_OP_QUERY_TABLES, FAULT_READ, OP_COST_ONE, op_get_table},
    [OP_CREATE_TABLE] = {OP_CREATE_TABLE, "CreateTable", RES_TABLES, NULL, NULL,
                         OPM(HTTP_M_POST), OPF_WRITES | OPF_BODY | OPF_BODY_ENTITY | OPF_PREFER,
                         AUTH_OP_CREATE_TABLE, FAULT_WRITE, OP_COST_ONE, op_create_table},
    [OP_DELETE_TABLE] = {OP_DELETE_TABLE, "DeleteTable", RES_TABLE_ENTRY, NULL, NULL,
                         OPM(HTTP_M_DELETE), OPF_WRITES, AUTH_OP_DELETE_TABLE, FAULT_WRITE,
                         OP_COST_ONE, op_delete_table},
    [OP_QUERY_ENTITIES] = {OP_QUERY_ENTITIES, "QueryEntities", RES_TABLE, NULL, NULL, OPM_READ,
                           OPF_BODY | OPF_BATCH_QUERY, AUTH_OP_QUERY_ENTITIES, FAULT_READ,
                           OP_COST_PER_ENTITY, op_query_entities},
    [OP_GET_ENTITY] = {OP_GET_ENTITY, "GetEntity", RES_ENTITY, NULL, NULL, OPM_READ,
                       OPF_BODY | OPF_BATCH_QUERY, AUTH_OP_GET_ENTITY, FAULT_READ, OP_COST_ONE,
                       op_get_entity},
    [OP_INSERT_ENTITY] = {OP_INSERT_ENTITY, "InsertEntity", RES_TABLE, NULL, NULL,
                          OPM(HTTP_M_POST), ENTITY_WRITE | OPF_BODY | OPF_PREFER,
                          AUTH_OP_INSERT_ENTITY, FAULT_WRITE, OP_COST_ONE_BODY_PK, op_write},
    [OP_UPDATE_ENTITY] = {OP_UPDATE_ENTITY, "UpdateEntity", RES_ENTITY, NULL, NULL,
                          OPM(HTTP_M_PUT), ENTITY_WRITE | OPF_IF_MATCH, AUTH_OP_UPDATE_ENTITY,
                          FAULT_WRITE, OP_COST_ONE, op_write},
    [OP_INSERT_OR_REPLACE] = {OP_INSERT_OR_REPLACE, "InsertOrReplaceEntity", RES_ENTITY, NULL,
                              NULL, OPM(HTTP_M_PUT), ENTITY_WRITE | OPF_NO_IF_MATCH,
                              AUTH_OP_INSERT_OR_REPLACE, FAULT_WRITE, OP_COST_ONE, op_write},
    [OP_MERGE_ENTITY] = {OP_MERGE_ENTITY, "MergeEntity", RES_ENTITY, NULL, NULL, OPM_MERGE,
                         ENTITY_WRITE | OPF_IF_MATCH, AUTH_OP_MERGE_ENTITY, FAULT_WRITE,
                         OP_COST_ONE, op_write},
    [OP_INSERT_OR_MERGE] = {OP_INSERT_OR_MERGE, "InsertOrMergeEntity", RES_ENTITY, NULL, NULL,
                            OPM_MERGE, ENTITY_WRITE | OPF_NO_IF_MATCH, AUTH_OP_INSERT_OR_MERGE,
                            FAULT_WRITE, OP_COST_ONE, op_write},
    [OP_DELETE_ENTITY] = {OP_DELETE_ENTITY, "DeleteEntity", RES_ENTITY, NULL, NULL,
                          OPM(HTTP_M_DELETE), OPF_WRITES | OPF_CHANGESET, AUTH_OP_DELETE_ENTITY,
                          FAULT_WRITE, OP_COST_ONE, op_write},
    [OP_BATCH] = {OP_BATCH, "EntityGroupTransaction", RES_BATCH, NULL, NULL, OPM(HTTP_M_POST),
                  OPF_WRITES | OPF_ENVELOPE, AUTH_OP_BATCH, FAULT_BATCH, OP_COST_PER_OP,
                  op_batch},
    [OP_GET_ACL] = {OP_GET_ACL, "GetTableAcl", RES_TABLE, "acl", NULL, OPM_READ, OPF_XML,
                    AUTH_OP_GET_ACL, FAULT_READ, OP_COST_ONE, op_get_acl},
    [OP_SET_ACL] = {OP_SET_ACL, "SetTableAcl", RES_TABLE, "acl", NULL, OPM(HTTP_M_PUT),
                    OPF_XML | OPF_WRITES, AUTH_OP_SET_ACL, FAULT_WRITE, OP_COST_ONE, op_set_acl},
    [OP_GET_SERVICE_PROPERTIES] = {OP_GET_SERVICE_PROPERTIES, "GetServiceProperties",
                                   RES_SERVICE, "properties", "service", OPM_READ, OPF_XML,
                                   AUTH_OP_GET_SERVICE_PROPERTIES, FAULT_READ, OP_COST_ONE,
                                   op_get_service_properties},
    [OP_SET_SERVICE_PROPERTIES] = {OP_SET_SERVICE_PROPERTIES, "SetServiceProperties",
                                   RES_SERVICE, "properties", "service", OPM(HTTP_M_PUT),
                                   OPF_XML | OPF_WRITES, AUTH_OP_SET_SERVICE_PROPERTIES,
                                   FAULT_WRITE, OP_COST_ONE, op_set_service_properties},
    [OP_GET_SERVICE_STATS] = {OP_GET_SERVICE_STATS, "GetServiceStats", RES_SERVICE, "stats",
                              "service", OPM_READ, OPF_XML, AUTH_OP_GET_SERVICE_STATS,
                              FAULT_READ, OP_COST_ONE, op_get_service_stats},
    [OP_PREFLIGHT] = {OP_PREFLIGHT, "Preflight", RES_NONE, NULL, NULL, OPM(HTTP_M_OPTIONS),
                      OPF_ANY_RESOURCE | OPF_BARE, AUTH_OP_PREFLIGHT, FAULT_READ, OP_COST_NONE,
                      op_preflight},
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

/* Why no row takes the request, in the order the service checks (SPEC
 * 1.4): the resource, its comp (where it has comp rows), restype, then the
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
