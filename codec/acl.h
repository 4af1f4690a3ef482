/* acl.h - stored access policies of a table (doc/protocol.md, Stored access policies): the
 * SignedIdentifiers XML, the compact encoding kept in the table row's
 * opaque ACL bytes (tables.h), and the lookup auth/ uses for a SAS `si`.
 *
 * Encoding (all integers big-endian):
 *     u8 version (=1), u8 count, then per policy:
 *     be16 id length, id bytes, u8 flags (1 start, 2 expiry, 4 permission,
 *     8 AccessPolicy element present), [be64 start ticks], [be64 expiry
 *     ticks], [u8 permission length, permission letters]. */
#ifndef TABLED_ACL_H
#define TABLED_ACL_H
#include <stddef.h>
#include <stdint.h>

#include "auth/auth.h"
#include "core/arena.h"
#include "core/buf.h"
#include "codec/errors.h"

#define ACL_MAX_POLICIES 5
#define ACL_MAX_ID 64            /* characters of an Id */
#define ACL_MAX_BODY 10000       /* bytes of a Set Table ACL body */

struct acl_policy {
    const char *id;              /* arena or the decoded blob's memory */
    size_t id_len;
    int has_policy;              /* an <AccessPolicy> element was given */
    int has_start, has_expiry, has_perm;
    int64_t start, expiry;       /* ticks (edm.h) */
    char perm[5];                /* subset of "raud", NUL-terminated */
};

struct acl {
    size_t n;
    struct acl_policy p[ACL_MAX_POLICIES];
};

/* Parses a Set Table ACL body (empty body: no policies). TERR_NONE, or
 * TERR_InvalidXmlDocument / TERR_InvalidXmlNodeValue. */
enum terr acl_parse_xml(struct arena *a, const char *body, size_t len, struct acl *out);
/* Appends the Get Table ACL document (declaration included). */
void acl_write_xml(const struct acl *acl, struct buf *b);
/* acl_codec.c: appends the encoding of acl (nothing at all for no policies). */
void acl_encode(const struct acl *acl, struct buf *b);
/* Decodes blob (ids point into it); an empty blob is no policies. 0 or -1. */
int acl_decode(const unsigned char *blob, size_t len, struct acl *out);
/* Whether a decoded acl is one Set Table ACL could have stored: ids of 1
 * to ACL_MAX_ID characters of UTF-8, distinct; times in the Edm.DateTime
 * range; permissions a subset of "raud" without repeats. 1 or 0. */
int acl_valid(const struct acl *acl);

/* auth_ctx.policy_lookup for a struct service (arg): the policy `id` of
 * `table` in `account`, read from the table cache. 1 found, 0 not. */
int acl_policy_lookup(void *arg, const char *account, const char *table, const char *id,
                      struct auth_policy *out);

#endif
