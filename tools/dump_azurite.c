/* dump_azurite.c - tabled import --from-azurite: Azurite's table database
 * (a LokiJS file, __azurite_db_table__.json in Azurite's --location).
 *
 * The file holds collections: "$TABLES_COLLECTION$" with one document per
 * table ({account, table, tableAcl: [{id, accessPolicy: {start, expiry,
 * permission}}]}), and one collection "ACCOUNT$TABLE" per table whose
 * documents carry the entity in "properties" (values with
 * "NAME@odata.type" annotations, as on the wire; Edm.Guid values are kept
 * base64-encoded by Azurite) and its Timestamp. Each entity is rebuilt as
 * OData JSON and parsed by the service's own entity parser, so it is
 * checked exactly as an insert would be; its Timestamp (and hence ETag) is
 * kept. Azurite's service properties ("$SERVICES_COLLECTION$") are not
 * imported (they are reported). The whole file is parsed in memory, its
 * nesting bounded first, and checked entirely before anything is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "tools/dump_int.h"
#include "store/kv.h"
#include "codec/dump_line.h"
#include "core/jsonwalk.h"
#include "codec/acl.h"
#include "codec/edm.h"
#include "store/entity.h"
#include "codec/entity_json.h"
#include "store/keys.h"

/* Reads a whole file into a NUL-terminated malloc()ed buffer. */
static char *read_all(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s", path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    size_t n;
    while (p && (n = fread(p + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (!p) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    p[len] = '\0';
    return p;
}

/* A member of an object by name, or NULL. */
static yajl_val member(yajl_val obj, const char *name)
{
    if (!YAJL_IS_OBJECT(obj))
        return NULL;
    for (size_t i = 0; i < obj->u.object.len; i++)
        if (strcmp(obj->u.object.keys[i], name) == 0)
            return obj->u.object.values[i];
    return NULL;
}

/* A string member, or NULL. */
static const char *member_str(yajl_val obj, const char *name)
{
    yajl_val v = member(obj, name);
    return YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
}

/* Builds the encoded ACL of a tableAcl array. 0, or -1 when malformed. */
static int azurite_acl(struct arena *a, yajl_val arr, struct buf *out)
{
    struct acl acl;
    memset(&acl, 0, sizeof acl);
    if (arr && !YAJL_IS_ARRAY(arr))
        return -1;
    for (size_t i = 0; arr && i < arr->u.array.len; i++) {
        yajl_val it = arr->u.array.values[i];
        const char *id = member_str(it, "id");
        if (!id || acl.n >= ACL_MAX_POLICIES || strlen(id) > ACL_MAX_ID)
            return -1;
        struct acl_policy *p = &acl.p[acl.n++];
        p->id = arena_strdup(a, id);
        p->id_len = strlen(id);
        yajl_val ap = member(it, "accessPolicy");
        if (!ap)
            continue;
        p->has_policy = 1;
        const char *start = member_str(ap, "start"), *expiry = member_str(ap, "expiry"),
                   *perm = member_str(ap, "permission");
        if (start && *start) {
            if (edm_datetime_parse(start, strlen(start), &p->start) != 0)
                return -1;
            p->has_start = 1;
        }
        if (expiry && *expiry) {
            if (edm_datetime_parse(expiry, strlen(expiry), &p->expiry) != 0)
                return -1;
            p->has_expiry = 1;
        }
        if (perm && *perm) {
            if (strlen(perm) >= sizeof p->perm)
                return -1;
            strcpy(p->perm, perm);
            p->has_perm = 1;
        }
    }
    acl_encode(&acl, out);
    return 0;
}

/* Writes one property value to g (numbers keep their original text). */
static void gen_value(yajl_gen g, yajl_val v)
{
    if (YAJL_IS_STRING(v)) {
        const char *s = YAJL_GET_STRING(v);
        yajl_gen_string(g, (const unsigned char *)s, strlen(s));
    } else if (YAJL_IS_NUMBER(v)) {
        yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        yajl_gen_bool(g, YAJL_IS_TRUE(v));
    } else {
        yajl_gen_null(g);
    }
}

/* Azurite keeps Edm.Guid values base64-encoded: the GUID text, decoded. */
static const char *guid_text(struct arena *a, const char *s)
{
    uint8_t g[16], *raw;
    size_t n;
    if (edm_guid_parse(s, strlen(s), g) == 0)
        return s;
    if (edm_base64_decode(a, s, strlen(s), &raw, &n) == 0 && edm_guid_parse((char *)raw, n, g) == 0)
        return arena_strndup(a, (char *)raw, n);
    return s;
}

/* Rebuilds one Azurite entity document as OData JSON into g. Returns the
 * Timestamp ticks through *ticks (0 when absent). */
static void azurite_entity_json(struct arena *a, yajl_gen g, yajl_val props, int64_t *ticks)
{
    yajl_gen_map_open(g);
    for (size_t i = 0; i < props->u.object.len; i++) {
        const char *k = props->u.object.keys[i];
        yajl_val v = props->u.object.values[i];
        if (strcmp(k, "Timestamp") == 0) {
            const char *ts = YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : "";
            edm_datetime_parse(ts, strlen(ts), ticks);
            continue;
        }
        if (strncmp(k, "Timestamp@", 10) == 0 || YAJL_IS_NULL(v))
            continue;
        yajl_gen_string(g, (const unsigned char *)k, strlen(k));
        char annot[300];
        snprintf(annot, sizeof annot, "%s@odata.type", k);
        const char *type = member_str(props, annot);
        if (type && strcmp(type, "Edm.Guid") == 0 && YAJL_IS_STRING(v)) {
            const char *s = guid_text(a, YAJL_GET_STRING(v));
            yajl_gen_string(g, (const unsigned char *)s, strlen(s));
        } else {
            gen_value(g, v);
        }
    }
    yajl_gen_map_close(g);
}

struct dump_azurite {
    char *path;
    yajl_val root;
    yajl_val cols;                   /* its "collections" array */
};

/* The account and table of an entity collection "ACCOUNT$TABLE" (account
 * replaced by --account); 0, or -1 when the collection is another kind. */
static int entity_collection(const struct dump *d, const char *name, char *acct, size_t cap,
                             const char **table)
{
    const char *dollar = name ? strchr(name, '$') : NULL;
    if (!dollar || dollar == name || !dollar[1] || strchr(dollar + 1, '$') ||
        (size_t)(dollar - name) >= cap)
        return -1;
    snprintf(acct, cap, "%.*s", (int)(dollar - name), name);
    if (d->account)
        snprintf(acct, cap, "%s", d->account);
    *table = dollar + 1;
    return 0;
}

/* Goes over the database: tables first (with their ACLs), then each
 * table's entities. With dry set it only checks them (names as the
 * service allows them, ACLs, every entity as an insert checks it), the
 * store untouched; else it writes them. 0, or -1 with a message. */
static int azurite_walk(struct dump *d, const struct dump_azurite *z, int dry, char *err,
                        size_t errlen)
{
    yajl_val cols = z->cols;
    const char *path = z->path;
    struct dump_batch *bt = calloc(1, sizeof *bt);
    struct arena *a = arena_new(65536);
    bt->a = arena_new(1 << 20);
    struct buf k, v, acl;
    buf_init(&k);
    buf_init(&v);
    buf_init(&acl);
    int rc = -1;
    for (size_t i = 0; i < cols->u.array.len; i++) {
        yajl_val c = cols->u.array.values[i];
        const char *name = member_str(c, "name");
        yajl_val data = member(c, "data");
        if (!name || !YAJL_IS_ARRAY(data))
            continue;
        if (!dry && strcmp(name, "$SERVICES_COLLECTION$") == 0 && data->u.array.len)
            fprintf(stderr, "tabled import: Azurite's service properties are not imported\n");
        if (strcmp(name, "$TABLES_COLLECTION$") != 0)
            continue;
        for (size_t j = 0; j < data->u.array.len; j++) {
            yajl_val t = data->u.array.values[j];
            const char *acct = d->account ? d->account : member_str(t, "account");
            const char *tab = member_str(t, "table");
            acl.len = 0;
            struct acl check;
            if (!acct || !tab || azurite_acl(a, member(t, "tableAcl"), &acl) != 0 ||
                acl_decode((unsigned char *)acl.data, acl.len, &check) != 0 ||
                !acl_valid(&check)) {
                snprintf(err, errlen, "%s: table document %zu is malformed (no account or "
                         "table, or an access policy the service would refuse)", path, j + 1);
                goto out;
            }
            if (dry && (!dump_name_ok(acct, 0) || !dump_name_ok(tab, 1))) {
                snprintf(err, errlen, "%s: invalid account or table name '%.64s/%.64s'", path,
                         acct, tab);
                goto out;
            }
            if (!dry && !dump_ensure_table(d, bt, acct, tab, (unsigned char *)acl.data, acl.len,
                                           1, err, errlen))
                goto out;
            arena_reset(a);
        }
    }
    for (size_t i = 0; i < cols->u.array.len; i++) {
        yajl_val c = cols->u.array.values[i];
        const char *name = member_str(c, "name"), *tab;
        yajl_val data = member(c, "data");
        char acct[64];
        if (!YAJL_IS_ARRAY(data) || entity_collection(d, name, acct, sizeof acct, &tab) != 0)
            continue;
        if (dry && (!dump_name_ok(acct, 0) || !dump_name_ok(tab, 1))) {
            snprintf(err, errlen, "%s: collection %.140s: invalid account or table name", path,
                     name);
            goto out;
        }
        const struct table_info *t =
            dry ? NULL : dump_ensure_table(d, bt, acct, tab, NULL, 0, 0, err, errlen);
        if (!dry && !t)
            goto out;
        for (size_t j = 0; j < data->u.array.len; j++) {
            yajl_val doc = data->u.array.values[j];
            yajl_val props = member(doc, "properties");
            if (!YAJL_IS_OBJECT(props)) {
                snprintf(err, errlen, "%s: entity %zu of %s has no properties", path, j + 1,
                         name);
                goto out;
            }
            int64_t ticks = 0;
            yajl_gen g = yajl_gen_alloc(NULL);
            azurite_entity_json(a, g, props, &ticks);
            const unsigned char *json;
            size_t json_len;
            yajl_gen_get_buf(g, &json, &json_len);
            if (!ticks) {
                const char *lm = member_str(doc, "lastModifiedTime");
                if (lm)
                    edm_datetime_parse(lm, strlen(lm), &ticks);
            }
            struct entity e;
            enum terr te = entity_json_parse(a, (const char *)json, json_len,
                                             ENTITY_PARSE_INSERT, &e);
            if (te != TERR_NONE) {
                snprintf(err, errlen, "%s: entity %zu of %s refused (%s: %s)", path, j + 1, name,
                         terr_info(te)->code, terr_info(te)->message);
                yajl_gen_free(g);
                goto out;
            }
            if (!dry) {
                e.timestamp = ticks ? ticks : edm_now_ticks();
                k.len = 0;
                v.len = 0;
                keys_entity(&k, t->id, e.pk, e.pk_len, e.rk, e.rk_len);
                entity_encode(&e, &v);
            }
            yajl_gen_free(g);
            arena_reset(a);
            if (dry)
                continue;
            if (dump_batch_put(d, bt, k.data, k.len, v.data, v.len, err, errlen) < 0)
                goto out;
            d->nentities++;
            dump_show_progress(d, 0);
        }
    }
    if (!dry && (dump_batch_commit(d, bt, err, errlen) < 0 || kv_sync(d->kv, err, errlen) != 0))
        goto out;
    if (!dry)
        dump_show_progress(d, 1);
    rc = 0;
out:
    buf_free(&k);
    buf_free(&v);
    buf_free(&acl);
    arena_free(bt->a);
    free(bt);
    arena_free(a);
    return rc;
}

struct dump_azurite *dump_azurite_load(struct dump *d, const char *path, char *err,
                                       size_t errlen)
{
    char *text = read_all(path, err, errlen);
    if (!text)
        return NULL;
    /* yajl_tree builds and frees its tree recursively: bound the nesting
       first, as for every JSON body the server reads. */
    char msg[256] = "";
    int wrc = jsonwalk_parse(NULL, NULL, text, strlen(text), JSONWALK_MAX_DEPTH, 0, msg,
                             sizeof msg);
    yajl_val root = wrc == JSONWALK_OK ? yajl_tree_parse(text, msg, sizeof msg) : NULL;
    free(text);
    yajl_val cols = member(root, "collections");
    if (!root || !YAJL_IS_ARRAY(cols)) {
        snprintf(err, errlen, "%s is not an Azurite table database (%s); nothing was imported",
                 path, root ? "no collections" : msg[0] ? msg : "malformed JSON");
        yajl_tree_free(root);
        return NULL;
    }
    struct dump_azurite *z = calloc(1, sizeof *z);
    if (!z)
        abort();
    z->path = strdup(path);
    z->root = root;
    z->cols = cols;
    char why[768] = "";
    if (azurite_walk(d, z, 1, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s; nothing was imported (fix the file, then import it)", why);
        dump_azurite_free(z);
        return NULL;
    }
    return z;
}

int dump_azurite_import(struct dump *d, struct dump_azurite *z, char *err, size_t errlen)
{
    return azurite_walk(d, z, 0, err, errlen);
}

void dump_azurite_free(struct dump_azurite *z)
{
    if (!z)
        return;
    yajl_tree_free(z->root);
    free(z->path);
    free(z);
}
