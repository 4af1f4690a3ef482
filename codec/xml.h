/* xml.h - a small, strict, bounded XML reader and an escaping writer for
 * the service's XML documents (Set Table ACL, Set Service Properties;
 * doc/protocol.md, Service properties, ACL and CORS). No library dependency.
 *
 * The reader accepts one document in UTF-8: an optional BOM, an optional
 * XML declaration (version 1.0, encoding UTF-8 if named), comments and
 * whitespace around exactly one root element; elements with attributes
 * (checked, then dropped), character data, CDATA sections and the five
 * predefined entity references plus numeric character references. It
 * refuses DOCTYPE/DTDs, processing instructions other than the
 * declaration, unbalanced or mismatched tags, duplicate attributes, bad
 * UTF-8, characters XML forbids, and anything after the root element but
 * whitespace and comments. Depth, node count and input size are bounded.
 *
 * The tree lives in the caller's arena. Only leaf elements keep their
 * text; an element with children records whether non-blank text stood
 * next to them (mixed), which no document of the service allows. */
#ifndef TABLED_XML_H
#define TABLED_XML_H
#include <stddef.h>

#include "core/arena.h"
#include "core/buf.h"

#define XML_MAX_INPUT (1u << 20)  /* bytes of one document */
#define XML_MAX_DEPTH 16          /* nesting of elements, root = 1 */
#define XML_MAX_NODES 4096        /* elements in one document */
#define XML_MAX_NAME 256          /* bytes of an element or attribute name */
#define XML_MAX_ATTRS 16          /* attributes of one element */

/* The declaration every document this server writes starts with. */
#define XML_DECL "<?xml version=\"1.0\" encoding=\"utf-8\"?>"

struct xml_node {
    const char *name;           /* as written, prefix included; NUL-terminated */
    const char *text;           /* decoded character data of a leaf, "" otherwise */
    size_t text_len;
    int mixed;                  /* non-blank text beside child elements */
    struct xml_node *parent;
    struct xml_node *first;     /* first child element */
    struct xml_node *next;      /* next sibling element */
    size_t nchildren;
};

/* Parses the document s[0..n). Returns 0 with *root set, or -1 with a
 * short reason in err (for logs and tests; never shown to clients). */
int xml_parse(struct arena *a, const char *s, size_t n, struct xml_node **root, char *err,
              size_t errlen);

/* First child element named name (exact, case-sensitive), or NULL. */
const struct xml_node *xml_child(const struct xml_node *n, const char *name);
/* Number of child elements named name. */
size_t xml_count(const struct xml_node *n, const char *name);
/* The node's text without leading and trailing XML whitespace, as an arena
 * copy (NUL-terminated); *len gets its length when len is not NULL. */
const char *xml_trimmed(struct arena *a, const struct xml_node *n, size_t *len);

/* Writer. xml_escape appends s[0..n) with & < > " ' and CR escaped. */
void xml_escape(struct buf *b, const char *s, size_t n);
/* <name>escaped text</name> */
void xml_put_elem(struct buf *b, const char *name, const char *text);
/* <name /> */
void xml_put_empty(struct buf *b, const char *name);
/* <name> and </name> */
void xml_open(struct buf *b, const char *name);
void xml_close(struct buf *b, const char *name);

#endif
