/* ops_props.h - Get/Set Table Service Properties (ops_props.c): what the
 * rest of tabled reads of an account's stored service properties. */
#ifndef TABLED_OPS_PROPS_H
#define TABLED_OPS_PROPS_H

#include <stddef.h>

#include "codec/cors.h"
#include "codec/props.h"

struct service;
/* ops_props.c: the CORS rules of account's stored service properties
 * (cached in memory; never NULL; valid until the next Set Service
 * Properties of that account). */
const struct cors_rules *props_cors_rules(struct service *svc, const char *account);
/* ops_props.c: stores doc[0..len) (props_stored_valid) as account's
 * service properties and drops the cached copy, for the admin listener's
 * import (ops_import.c). 0 or a backend status. */
struct req_ctx;
int props_put_stored(struct req_ctx *c, const char *account, const char *doc, size_t len);

/* ops_props.c: frees a service's cache of decoded properties (NULL is
 * fine; service_free). */
struct props_cache;
void props_cache_free(struct props_cache *cache);

#endif
