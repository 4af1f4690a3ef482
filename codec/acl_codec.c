/* acl_codec.c - the compact encoding of a table's stored access policies
 * kept in its row (acl.h), and the check that a decoded one is what Set
 * Table ACL could have stored (tabled import checks the ACLs of a file
 * with it before writing anything). */
#include <string.h>

#include "codec/acl.h"
#include "core/coding.h"
#include "codec/edm.h"

#define ACL_VERSION 1
#define ACL_F_START 1u
#define ACL_F_EXPIRY 2u
#define ACL_F_PERM 4u
#define ACL_F_POLICY 8u

void acl_encode(const struct acl *acl, struct buf *b)
{
    if (acl->n == 0)
        return;
    buf_put_u8(b, ACL_VERSION);
    buf_put_u8(b, (uint8_t)acl->n);
    for (size_t i = 0; i < acl->n; i++) {
        const struct acl_policy *p = &acl->p[i];
        buf_put_be16(b, (uint16_t)p->id_len);
        buf_append(b, p->id, p->id_len);
        unsigned flags = (p->has_start ? ACL_F_START : 0) | (p->has_expiry ? ACL_F_EXPIRY : 0) |
                         (p->has_perm ? ACL_F_PERM : 0) | (p->has_policy ? ACL_F_POLICY : 0);
        buf_put_u8(b, (uint8_t)flags);
        if (p->has_start)
            buf_put_be64(b, (uint64_t)p->start);
        if (p->has_expiry)
            buf_put_be64(b, (uint64_t)p->expiry);
        if (p->has_perm) {
            size_t pl = strlen(p->perm);
            buf_put_u8(b, (uint8_t)pl);
            buf_append(b, p->perm, pl);
        }
    }
}

/* Big-endian integer of n bytes at *p (bounds checked by the caller). */
static uint64_t get_be(const unsigned char **p, size_t n)
{
    uint64_t v = coding_get_be(*p, n);
    *p += n;
    return v;
}

int acl_decode(const unsigned char *blob, size_t len, struct acl *out)
{
    memset(out, 0, sizeof *out);
    if (len == 0)
        return 0;
    const unsigned char *p = blob, *end = blob + len;
    if (len < 2 || p[0] != ACL_VERSION || p[1] > ACL_MAX_POLICIES)
        return -1;
    size_t n = p[1];
    p += 2;
    for (size_t i = 0; i < n; i++) {
        struct acl_policy *ap = &out->p[i];
        if (end - p < 2)
            return -1;
        ap->id_len = (size_t)get_be(&p, 2);
        if ((size_t)(end - p) < ap->id_len + 1)
            return -1;
        ap->id = (const char *)p;
        p += ap->id_len;
        unsigned flags = *p++;
        ap->has_policy = (flags & ACL_F_POLICY) != 0;
        if (flags & ACL_F_START) {
            if (end - p < 8)
                return -1;
            ap->has_start = 1;
            ap->start = (int64_t)get_be(&p, 8);
        }
        if (flags & ACL_F_EXPIRY) {
            if (end - p < 8)
                return -1;
            ap->has_expiry = 1;
            ap->expiry = (int64_t)get_be(&p, 8);
        }
        if (flags & ACL_F_PERM) {
            if (end - p < 1 || p[0] > 4 || (size_t)(end - p) < 1u + p[0])
                return -1;
            size_t pl = *p++;
            memcpy(ap->perm, p, pl);
            ap->perm[pl] = '\0';
            ap->has_perm = 1;
            p += pl;
        }
    }
    if (p != end)
        return -1;
    out->n = n;
    return 0;
}

/* Characters (code points) of well-formed UTF-8 text. */
static size_t codec_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            k++;
    return k;
}

int acl_valid(const struct acl *acl)
{
    for (size_t i = 0; i < acl->n; i++) {
        const struct acl_policy *p = &acl->p[i];
        if (p->id_len == 0 || utf8_check(p->id, p->id_len) != 0 ||
            codec_chars(p->id, p->id_len) > ACL_MAX_ID || memchr(p->id, '\0', p->id_len))
            return 0;
        for (size_t k = 0; k < i; k++)
            if (acl->p[k].id_len == p->id_len && memcmp(acl->p[k].id, p->id, p->id_len) == 0)
                return 0;
        if ((p->has_start || p->has_expiry || p->has_perm) && !p->has_policy)
            return 0;
        if ((p->has_start && (p->start < EDM_DATETIME_MIN_TICKS ||
                              p->start > EDM_DATETIME_MAX_TICKS)) ||
            (p->has_expiry && (p->expiry < EDM_DATETIME_MIN_TICKS ||
                               p->expiry > EDM_DATETIME_MAX_TICKS)))
            return 0;
        size_t pl = strlen(p->perm);
        if (p->has_perm ? pl == 0 : pl != 0)
            return 0;
        for (size_t k = 0; k < pl; k++)
            if (!strchr("raud", p->perm[k]) || memchr(p->perm, p->perm[k], k))
                return 0;
    }
    return 1;
}
