/* route.h - from URL to resource: account (path- or host-style), the
 * resource path and the entity key predicate (doc/protocol.md, Endpoint styles; Resource paths). */
#ifndef TABLED_ROUTE_H
#define TABLED_ROUTE_H
#include <stddef.h>

#include "protocol/ctx.h"

/* Finds the account and the resource path of c->req. Sets c->account,
 * c->secondary, c->base; *rest is the raw resource path after the account
 * ("" or starting with '/'). Returns TERR_NONE or an error. */
enum terr route_account(struct req_ctx *c, const char **rest, size_t *rest_len);

/* Parses the raw resource path into c->res, c->table, c->pk, c->rk. */
enum terr route_resource(struct req_ctx *c, const char *rest, size_t rest_len);

/* Parses "(PartitionKey='..',RowKey='..')" (already percent-decoded), either
 * order, blanks around ',' and '='. 0 or -1. Keys are arena copies. */
int route_key_predicate(struct arena *a, const char *s, size_t n, const char **pk,
                        size_t *pk_len, const char **rk, size_t *rk_len);

/* Parses "('name')" of Tables('name'); 0 or -1. */
int route_quoted_arg(struct arena *a, const char *s, size_t n, const char **out,
                     size_t *out_len);

#endif
