/* atom_write.c - Atom entries, feeds and the OData XML error in the
 * service's shapes (atom.h). */
#include <stdio.h>
#include <string.h>

#include "codec/atom.h"
#include "codec/edm.h"
#include "codec/entity_json.h"
#include "codec/url.h"

#define DECL "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>"
#define NAMESPACES \
    " xmlns:d=\"" ATOM_NS_D "\" xmlns:m=\"" ATOM_NS_M "\""

/* 1: escape as an entity or character reference; 0: copy. */
static const unsigned char special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['&'] = 1, ['<'] = 1, ['>'] = 1, ['\''] = 0,
    [0xEF] = 1,   /* may start U+FFFE / U+FFFF */
};

void atom_escape(struct buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (!special[c])
            continue;
        if (c == 0xEF) {
            if (!(i + 2 < n && p[i + 1] == 0xBF && (p[i + 2] == 0xBE || p[i + 2] == 0xBF)))
                continue;
            buf_append(b, s + run, i - run);
            buf_puts(b, p[i + 2] == 0xBE ? "&#xFFFE;" : "&#xFFFF;");
            i += 2;
            run = i + 1;
            continue;
        }
        buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': buf_puts(b, "&quot;"); break;
        case '&': buf_puts(b, "&amp;"); break;
        case '<': buf_puts(b, "&lt;"); break;
        case '>': buf_puts(b, "&gt;"); break;
        default: buf_printf(b, "&#x%X;", (unsigned)c); break;
        }
    }
    buf_append(b, s + run, n - run);
}

void atom_ctx_now(struct arena *a, struct atom_ctx *ctx)
{
    char t[40];
    edm_datetime_format7(edm_now_ticks(), t);
    ctx->updated = arena_strndup(a, t, strlen(t));
}

/* The opening of a top-level element: declaration, xml:base, namespaces. */
static void open_top(struct buf *b, const char *elem, const struct atom_ctx *ctx)
{
    buf_puts(b, DECL "<");
    buf_puts(b, elem);
    buf_puts(b, " xml:base=\"");
    atom_escape(b, ctx->base, strlen(ctx->base));
    buf_puts(b, "/\"" NAMESPACES);
}

void atom_feed_open(struct buf *b, const struct atom_ctx *ctx, const char *title)
{
    size_t tl = strlen(title);
    open_top(b, "feed", ctx);
    buf_puts(b, " xmlns=\"" ATOM_NS_ATOM "\"><title type=\"text\">");
    atom_escape(b, title, tl);
    buf_puts(b, "</title><id>");
    atom_escape(b, ctx->base, strlen(ctx->base));
    buf_putc(b, '/');
    atom_escape(b, title, tl);
    buf_puts(b, "</id><updated>");
    buf_puts(b, ctx->updated);
    buf_puts(b, "</updated><link rel=\"self\" title=\"");
    atom_escape(b, title, tl);
    buf_puts(b, "\" href=\"");
    atom_escape(b, title, tl);
    buf_puts(b, "\" />");
}

void atom_feed_close(struct buf *b)
{
    buf_puts(b, "</feed>");
}

/* <entry ...> up to the end of <author>: id (BASE/path), empty title,
 * updated, author. etag may be NULL (tables). */
static void entry_head(struct buf *b, const struct atom_ctx *ctx, int top, const char *etag,
                       const char *path, size_t path_len)
{
    if (top)
        open_top(b, "entry", ctx);
    else
        buf_puts(b, "<entry");
    if (etag) {
        buf_puts(b, " m:etag=\"");
        atom_escape(b, etag, strlen(etag));
        buf_putc(b, '"');
    }
    if (top)
        buf_puts(b, " xmlns=\"" ATOM_NS_ATOM "\"");
    buf_puts(b, "><id>");
    atom_escape(b, ctx->base, strlen(ctx->base));
    buf_putc(b, '/');
    atom_escape(b, path, path_len);
    buf_puts(b, "</id><title type=\"text\"></title><updated>");
    buf_puts(b, ctx->updated);
    buf_puts(b, "</updated><author><name /></author><link rel=\"edit\" title=\"");
}

/* link (after its title attribute), category and the content opening. */
static void entry_middle(struct buf *b, const struct atom_ctx *ctx, const char *title,
                         const char *path, size_t path_len)
{
    atom_escape(b, title, strlen(title));
    buf_puts(b, "\" href=\"");
    atom_escape(b, path, path_len);
    buf_puts(b, "\" /><category term=\"");
    atom_escape(b, ctx->account, strlen(ctx->account));
    buf_putc(b, '.');
    atom_escape(b, title, strlen(title));
    buf_puts(b, "\" scheme=\"" ATOM_SCHEME "\" /><content type=\"application/xml\">"
                "<m:properties>");
}

static void entry_tail(struct buf *b)
{
    buf_puts(b, "</m:properties></content></entry>");
}

void atom_write_table(struct buf *b, const char *name, size_t n, const struct atom_ctx *ctx,
                      int top)
{
    struct buf path;
    buf_init(&path);
    buf_puts(&path, "Tables('");
    buf_append(&path, name, n);
    buf_puts(&path, "')");
    entry_head(b, ctx, top, NULL, path.data, path.len);
    entry_middle(b, ctx, "Tables", path.data, path.len);
    buf_puts(b, "<d:TableName>");
    atom_escape(b, name, n);
    buf_puts(b, "</d:TableName>");
    entry_tail(b);
    buf_free(&path);
}

/* <d:NAME m:type="T">text</d:NAME> (no m:type for strings). */
static void put_property(struct buf *b, const char *name, size_t n, const struct edm_value *v)
{
    char tmp[64];
    size_t tl;
    buf_puts(b, "<d:");
    buf_append(b, name, n);
    if (v->type != EDM_STRING) {
        buf_puts(b, " m:type=\"");
        buf_puts(b, edm_type_name(v->type));
        buf_putc(b, '"');
    }
    if ((v->type == EDM_STRING || v->type == EDM_BINARY) && v->u.s.len == 0) {
        buf_puts(b, " />");
        return;
    }
    buf_putc(b, '>');
    switch (v->type) {
    case EDM_STRING:
        atom_escape(b, v->u.s.ptr, v->u.s.len);
        break;
    case EDM_BINARY:
        edm_base64_encode(b, (const uint8_t *)v->u.s.ptr, v->u.s.len);
        break;
    case EDM_BOOLEAN:
        buf_puts(b, v->u.b ? "true" : "false");
        break;
    case EDM_DATETIME:
        tl = edm_datetime_format(v->u.ticks, tmp);
        buf_append(b, tmp, tl);
        break;
    case EDM_DOUBLE:
        /* XML Schema spellings, as .NET's XmlConvert: INF, -INF, NaN,
         * and no ".0" on whole numbers. */
        tl = edm_double_format(v->u.d, tmp);
        if (strcmp(tmp, "Infinity") == 0)
            buf_puts(b, "INF");
        else if (strcmp(tmp, "-Infinity") == 0)
            buf_puts(b, "-INF");
        else if (tl > 2 && memcmp(tmp + tl - 2, ".0", 2) == 0)
            buf_append(b, tmp, tl - 2);
        else
            buf_append(b, tmp, tl);
        break;
    case EDM_GUID:
        tl = edm_guid_format(v->u.guid, tmp);
        buf_append(b, tmp, tl);
        break;
    case EDM_INT32:
        buf_printf(b, "%ld", (long)v->u.i32);
        break;
    case EDM_INT64:
        buf_printf(b, "%lld", (long long)v->u.i64);
        break;
    }
    buf_puts(b, "</d:");
    buf_append(b, name, n);
    buf_putc(b, '>');
}

/* Whether name is projected by ctx's $select (all when none or "*"). */
static int selected(const struct atom_ctx *ctx, const char *name, size_t n)
{
    if (!ctx->select)
        return 1;
    for (size_t i = 0; i < ctx->nselect; i++) {
        const char *s = ctx->select[i];
        if (strcmp(s, "*") == 0 || (strlen(s) == n && memcmp(s, name, n) == 0))
            return 1;
    }
    return 0;
}

void atom_write_entity(struct buf *b, const struct entity *e, const struct atom_ctx *ctx,
                       int top)
{
    const char *pk = e->pk ? e->pk : "", *rk = e->rk ? e->rk : "";
    size_t pk_len = e->pk ? e->pk_len : 0, rk_len = e->rk ? e->rk_len : 0;
    char etag[80], tmp[40];
    entity_etag(e->timestamp, etag);
    struct buf path;
    buf_init(&path);
    url_entity_path(&path, ctx->table, pk, pk_len, rk, rk_len);
    entry_head(b, ctx, top, etag, path.data, path.len);
    entry_middle(b, ctx, ctx->table, path.data, path.len);
    buf_free(&path);
    if (selected(ctx, "PartitionKey", 12)) {
        buf_puts(b, "<d:PartitionKey>");
        atom_escape(b, pk, pk_len);
        buf_puts(b, "</d:PartitionKey>");
    }
    if (selected(ctx, "RowKey", 6)) {
        buf_puts(b, "<d:RowKey>");
        atom_escape(b, rk, rk_len);
        buf_puts(b, "</d:RowKey>");
    }
    if (selected(ctx, "Timestamp", 9)) {
        size_t tl = edm_datetime_format(e->timestamp, tmp);
        buf_puts(b, "<d:Timestamp m:type=\"Edm.DateTime\">");
        buf_append(b, tmp, tl);
        buf_puts(b, "</d:Timestamp>");
    }
    for (size_t i = 0; i < e->nprops; i++) {
        const struct property *p = &e->props[i];
        if (selected(ctx, p->name, p->name_len))
            put_property(b, p->name, p->name_len, &p->v);
    }
    /* Listed but absent: <d:X m:null="true" />, each once. */
    for (size_t i = 0; ctx->select && i < ctx->nselect; i++) {
        const char *s = ctx->select[i];
        size_t sl = strlen(s);
        if (strcmp(s, "*") == 0 || strcmp(s, "PartitionKey") == 0 || strcmp(s, "RowKey") == 0 ||
            strcmp(s, "Timestamp") == 0 || entity_find(e, s, sl) >= 0 || utf8_check(s, sl) != 0)
            continue;   /* (a name that is not UTF-8 cannot be an XML name) */
        size_t j = 0;
        while (j < i && strcmp(ctx->select[j], s) != 0)
            j++;
        if (j < i)
            continue;
        buf_puts(b, "<d:");
        buf_append(b, s, sl);
        buf_puts(b, " m:null=\"true\" />");
    }
    entry_tail(b);
}

/* Indented as the service's WCF Data Services error writer does (an
 * observed body: azure-sdk-for-js issue 10917). */
void atom_write_error(struct buf *b, const char *code, const char *message, size_t len)
{
    buf_puts(b, DECL "\n<error xmlns=\"" ATOM_NS_M "\">\n  <code>");
    atom_escape(b, code, strlen(code));
    buf_puts(b, "</code>\n  <message xml:lang=\"en-US\">");
    atom_escape(b, message, len);
    buf_puts(b, "</message>\n</error>");
}
