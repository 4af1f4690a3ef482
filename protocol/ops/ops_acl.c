/* ops_acl.c - Get Table ACL and Set Table ACL (doc/protocol.md, Get Table ACL; Set Table ACL):
 * the SignedIdentifiers document, its compact encoding in the table row,
 * and the stored-policy lookup behind a table SAS `si` (acl.h). */
#include <string.h>

#include "core/log.h"
#include "codec/acl.h"
#include "protocol/ctx.h"
#include "codec/edm.h"
#include "store/keys.h"
#include "codec/xml.h"

/* Characters (code points) of UTF-8 text. */
static size_t utf8_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            k++;
    return k;
}

/* The single child `name` of n: *out NULL when absent; -1 when it occurs
 * more than once or is not a leaf. */
static int leaf(const struct xml_node *n, const char *name, const struct xml_node **out)
{
    *out = NULL;
    if (xml_count(n, name) > 1)
        return -1;
    const struct xml_node *c = xml_child(n, name);
    if (c && (c->first || c->mixed))
        return -1;
    *out = c;
    return 0;
}

/* Start or Expiry: absent or blank leaves *has 0. */
static enum terr parse_time(struct arena *a, const struct xml_node *ap, const char *name,
                            int *has, int64_t *ticks)
{
    const struct xml_node *n;
    if (leaf(ap, name, &n))
        return TERR_InvalidXmlDocument;
    if (!n)
        return TERR_NONE;
    size_t len;
    const char *v = xml_trimmed(a, n, &len);
    if (len == 0)
        return TERR_NONE;
    if (edm_datetime_parse(v, len, ticks) != 0)
        return TERR_InvalidXmlNodeValue;
    *has = 1;
    return TERR_NONE;
}

/* One <AccessPolicy>. */
static enum terr parse_policy(struct arena *a, const struct xml_node *ap, struct acl_policy *p)
{
    if (ap->mixed)
        return TERR_InvalidXmlDocument;
    p->has_policy = 1;
    enum terr e = parse_time(a, ap, "Start", &p->has_start, &p->start);
    if (!e)
        e = parse_time(a, ap, "Expiry", &p->has_expiry, &p->expiry);
    if (e)
        return e;
    const struct xml_node *pn;
    if (leaf(ap, "Permission", &pn))
        return TERR_InvalidXmlDocument;
    if (!pn)
        return TERR_NONE;
    size_t len;
    const char *v = xml_trimmed(a, pn, &len);
    if (len == 0)
        return TERR_NONE;
    if (len > 4)
        return TERR_InvalidXmlDocument;
    for (size_t i = 0; i < len; i++)
        if (!strchr("raud", v[i]) || memchr(v, v[i], i))
            return TERR_InvalidXmlDocument;
    memcpy(p->perm, v, len);
    p->perm[len] = '\0';
    p->has_perm = 1;
    return TERR_NONE;
}

enum terr acl_parse_xml(struct arena *a, const char *body, size_t len, struct acl *out)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", body[i]))
        i++;
    if (i == len)
        return TERR_NONE; /* empty body: clear */
    struct xml_node *root;
    char err[160];
    if (xml_parse(a, body, len, &root, err, sizeof err) != 0) {
        log_debug("Set Table ACL: %s", err);
        return TERR_InvalidXmlDocument;
    }
    if (strcmp(root->name, "SignedIdentifiers") != 0 || root->mixed ||
        (!root->first && root->text_len && xml_trimmed(a, root, NULL)[0]))
        return TERR_InvalidXmlDocument;
    if (xml_count(root, "SignedIdentifier") > ACL_MAX_POLICIES)
        return TERR_InvalidXmlDocument;
    for (const struct xml_node *si = root->first; si; si = si->next) {
        if (strcmp(si->name, "SignedIdentifier") != 0)
            continue; /* unknown elements are ignored */
        struct acl_policy *p = &out->p[out->n];
        const struct xml_node *idn;
        if (si->mixed || leaf(si, "Id", &idn) || !idn)
            return TERR_InvalidXmlDocument;
        p->id = xml_trimmed(a, idn, &p->id_len);
        if (p->id_len == 0 || utf8_chars(p->id, p->id_len) > ACL_MAX_ID)
            return TERR_InvalidXmlDocument;
        for (size_t k = 0; k < out->n; k++)
            if (out->p[k].id_len == p->id_len && memcmp(out->p[k].id, p->id, p->id_len) == 0)
                return TERR_InvalidXmlDocument;
        size_t naps = xml_count(si, "AccessPolicy");
        if (naps > 1)
            return TERR_InvalidXmlDocument;
        if (naps == 1) {
            enum terr e = parse_policy(a, xml_child(si, "AccessPolicy"), p);
            if (e)
                return e;
        }
        out->n++;
    }
    return TERR_NONE;
}

void acl_write_xml(const struct acl *acl, struct buf *b)
{
    buf_puts(b, XML_DECL);
    if (acl->n == 0) {
        xml_put_empty(b, "SignedIdentifiers");
        return;
    }
    xml_open(b, "SignedIdentifiers");
    for (size_t i = 0; i < acl->n; i++) {
        const struct acl_policy *p = &acl->p[i];
        char t[40];
        xml_open(b, "SignedIdentifier");
        xml_open(b, "Id");
        xml_escape(b, p->id, p->id_len);
        xml_close(b, "Id");
        if (p->has_policy && !p->has_start && !p->has_expiry && !p->has_perm) {
            xml_put_empty(b, "AccessPolicy");
        } else if (p->has_policy) {
            xml_open(b, "AccessPolicy");
            if (p->has_start) {
                edm_datetime_format7(p->start, t);
                xml_put_elem(b, "Start", t);
            }
            if (p->has_expiry) {
                edm_datetime_format7(p->expiry, t);
                xml_put_elem(b, "Expiry", t);
            }
            if (p->has_perm)
                xml_put_elem(b, "Permission", p->perm);
            xml_close(b, "AccessPolicy");
        }
        xml_close(b, "SignedIdentifier");
    }
    xml_close(b, "SignedIdentifiers");
}

int acl_policy_lookup(void *arg, const char *account, const char *table, const char *id,
                      struct auth_policy *out)
{
    struct service *svc = arg;
    if (!id)
        return 0;
    const struct table_info *t;
    /* on a shared store another front end may have changed it: the row as
       stored now (read into a; the cache's otherwise) */
    struct arena *a = svc->shared ? arena_new(512) : NULL;
    if (catalog_table(svc->cat, a, account, table, strlen(table), &t) != STORE_OK)
        t = NULL;
    struct acl acl;
    int found = t && acl_decode(t->acl, t->acl_len, &acl) == 0;
    if (t && !found)
        log_error("corrupt ACL of table %s/%s", account, t->name);
    size_t il = strlen(id);
    int hit = 0;
    for (size_t i = 0; found && i < acl.n && !hit; i++) {
        const struct acl_policy *p = &acl.p[i];
        if (p->id_len != il || memcmp(p->id, id, il) != 0)
            continue;
        memset(out, 0, sizeof *out);
        out->has_start = p->has_start;
        out->start_ticks = p->start;
        out->has_expiry = p->has_expiry;
        out->expiry_ticks = p->expiry;
        out->has_perm = p->has_perm;
        memcpy(out->perm, p->perm, sizeof p->perm);
        hit = 1;
    }
    arena_free(a);   /* the ACL pointed into the row read */
    return hit;
}

void op_get_acl(struct req_ctx *c)
{
    const struct table_info *t;
    enum terr te = ctx_table(c, &t);
    if (te != TERR_NONE) {
        reply_error(c, te == TERR_TableNotFound ? TERR_ResourceNotFound : te);
        return;
    }
    struct acl acl;
    if (acl_decode(t->acl, t->acl_len, &acl) != 0) {
        log_error("corrupt ACL of table %s/%s", c->account->name, t->name);
        reply_error(c, TERR_InternalError);
        return;
    }
    c->resp->status = 200;
    response_header(c->resp, "Content-Type", "application/xml");
    acl_write_xml(&acl, &c->resp->body);
}

void op_set_acl(struct req_ctx *c)
{
    const struct request *req = c->req;
    if (req->body_len > ACL_MAX_BODY) {
        reply_error(c, TERR_RequestBodyTooLarge);
        return;
    }
    const struct table_info *t;
    enum terr te = ctx_table(c, &t);
    if (te != TERR_NONE) {
        reply_error(c, te == TERR_TableNotFound ? TERR_ResourceNotFound : te);
        return;
    }
    struct acl acl;
    enum terr e = acl_parse_xml(c->a, req->body ? req->body : "", req->body_len, &acl);
    if (e) {
        reply_error(c, e);
        c->resp->reason = terr_info(e)->message;
        return;
    }
    struct buf blob;
    buf_init(&blob);
    acl_encode(&acl, &blob);
    /* the table must still exist (a delete may have raced this request;
       on a shared store: and not be re-created by another front end) */
    int rc = catalog_set_acl(c->svc->cat, t, c->account->name, (const unsigned char *)blob.data,
                             blob.len);
    buf_free(&blob);
    if (rc != 0) {
        reply_error(c, rc == STORE_NOTFOUND ? TERR_TableNotFound : terr_from_store(rc));
        return;
    }
    c->resp->status = 204;
}
