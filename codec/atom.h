/* atom.h - AtomPub XML for the service versions before 2015-12-11
 * (issue 20): reading Atom entries (expat) and writing entries, feeds
 * and the OData XML error.
 *
 * Reading: an Atom entry's <content><m:properties> is turned into the
 * JSON object the JSON path parses ({"Name":"text","Name@odata.type":
 * "Edm.Int32",...}), so an Atom body gets every check, limit and error
 * code of a JSON body from entity_json_parse (and Create Table's
 * TableName reader) without a second validator. The XML is parsed by
 * expat with a DOCTYPE refused outright (no DTD, hence no entity
 * declarations, no entity expansion and no external entities), nesting
 * depth bounded by ATOM_MAX_DEPTH and input size by the body limit.
 *
 * Writing follows the service's documented Atom examples: compact (no
 * indentation), namespaces d/m on the top element, one <entry> per entity
 * with id, title, updated, author, link rel="edit", category term
 * "ACCOUNT.TABLE", m:etag, and <content type="application/xml">
 * <m:properties> holding each property with its m:type (none for
 * Edm.String). Characters XML 1.0 cannot carry (C0 controls other than
 * tab, LF and CR; U+FFFE, U+FFFF) are written as character references
 * (&#x1;), as .NET's XmlWriter does with CheckCharacters off; CR is
 * written as &#xD; so that it survives line-end normalisation. */
#ifndef TABLED_ATOM_H
#define TABLED_ATOM_H
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/buf.h"
#include "store/entity.h"
#include "codec/errors.h"

#define ATOM_MAX_DEPTH 16   /* element nesting of a request entry */

#define ATOM_NS_ATOM "http://www.w3.org/2005/Atom"
#define ATOM_NS_D "http://schemas.microsoft.com/ado/2007/08/dataservices"
#define ATOM_NS_M "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
#define ATOM_SCHEME "http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"

#define ATOM_CONTENT_TYPE "application/atom+xml;charset=utf-8"

/* The first version that no longer serves Atom (415 AtomFormatNotSupported). */
#define ATOM_LAST_VERSION_BEFORE "2015-12-11"

/* Turns the Atom entry body[0..len) into the JSON object of its
 * m:properties (arena memory, NUL-terminated) in *json / *json_len.
 * TERR_NONE, or TERR_InvalidInput for a body that is not well-formed XML,
 * has a DOCTYPE, nests deeper than ATOM_MAX_DEPTH, is not an
 * <entry> of the Atom namespace, or has a property with child elements.
 * Properties are the children of entry/content/m:properties in the
 * dataservices namespace; m:type becomes NAME@odata.type, m:null="true"
 * null; Edm.Double's INF/-INF become Infinity/-Infinity and Edm.Boolean's
 * 1/0 true/false (XML Schema spellings). */
enum terr atom_to_json(struct arena *a, const char *body, size_t len, const char **json,
                       size_t *json_len);

/* What the writers need to know about the request. */
struct atom_ctx {
    const char *base;       /* scheme://host[:port][/account], no trailing '/' */
    const char *account;
    const char *table;      /* entity writers: the table name as stored */
    const char *updated;    /* <updated> text (the response time) */
    const char *const *select;  /* $select names, NULL = all */
    size_t nselect;
};

/* Fills ctx->updated with the current time (arena copy). */
void atom_ctx_now(struct arena *a, struct atom_ctx *ctx);

/* <?xml ...?><feed xml:base=.. namespaces><title type="text">T</title>
 * <id>BASE/T</id><updated>..</updated><link rel="self" title="T" href="T" /> */
void atom_feed_open(struct buf *b, const struct atom_ctx *ctx, const char *title);
/* </feed> */
void atom_feed_close(struct buf *b);

/* One entity entry; top = 1 for a document of its own (declaration,
 * xml:base and namespaces on the entry). */
void atom_write_entity(struct buf *b, const struct entity *e, const struct atom_ctx *ctx,
                       int top);
/* One Tables entry (<d:TableName>); top as above. */
void atom_write_table(struct buf *b, const char *name, size_t n, const struct atom_ctx *ctx,
                      int top);

/* The OData XML error document (default namespace, doc/protocol.md, OData XML errors), indented
 * as the service writes it; message is len bytes (NUL bytes allowed: they
 * are written as character references, like every control character). */
void atom_write_error(struct buf *b, const char *code, const char *message, size_t len);

/* Appends s[0..n) escaped for XML text and attribute values (see above). */
void atom_escape(struct buf *b, const char *s, size_t n);

#endif
