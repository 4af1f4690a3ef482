/* dump_line.c - one line of an export file, read and checked (see
 * dump_line.h). Entity lines, nearly all of a file, are read by their
 * fixed prefix as tabled export writes it and their entity by the
 * service's own entity parser; the few other lines go through a yajl tree
 * once their nesting is known to be bounded. */
#include "codec/dump_line.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "core/jsonwalk.h"
#include "codec/acl.h"
#include "codec/edm.h"
#include "codec/entity_json.h"
#include "codec/errors.h"

int dump_name_ok(const char *s, int table)
{
    size_t n = strlen(s);
    if (n < 3 || n > (table ? 63u : 24u) || (table && !isalpha((unsigned char)s[0])))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Checks the names of a line; 0, or -1 with a message. */
static int names_ok(const struct dump_line *l, char *err, size_t errlen)
{
    if (!dump_name_ok(l->account, 0)) {
        snprintf(err, errlen, "invalid account name '%.64s' (3 to 24 letters and digits)",
                 l->account);
        return -1;
    }
    if (l->table && !dump_name_ok(l->table, 1)) {
        snprintf(err, errlen, "invalid table name '%.64s' (3 to 63 letters and digits, "
                 "starting with a letter)", l->table);
        return -1;
    }
    return 0;
}

/* The bytes from p up to the next '"' before end, copied into the arena;
 * *next is set after that quote. NULL when there is none or the text
 * holds a backslash (names as tabled writes them have no escapes). */
static const char *quoted(struct arena *a, const char *p, const char *end, const char **next)
{
    const char *q = memchr(p, '"', (size_t)(end - p));
    if (!q || memchr(p, '\\', (size_t)(q - p)))
        return NULL;
    *next = q + 1;
    return arena_strndup(a, p, (size_t)(q - p));
}

/* Whether [p, end) starts with the literal s; advances *p past it. */
static int literal(const char **p, const char *end, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(end - *p) < n || memcmp(*p, s, n) != 0)
        return 0;
    *p += n;
    return 1;
}

/* An entity line: {"account":"A","table":"T","ticks":N,"entity":{...}} */
static int read_entity(struct arena *a, const char *p, const char *end, struct dump_line *out,
                       char *err, size_t errlen)
{
    const char *q;
    out->kind = DUMP_LINE_ENTITY;
    if (!literal(&p, end, "{\"account\":\"") || !(out->account = quoted(a, p, end, &q)) ||
        !(p = q, literal(&p, end, ",\"table\":\"")) || !(out->table = quoted(a, p, end, &q)) ||
        !(p = q, literal(&p, end, ",\"ticks\":"))) {
        snprintf(err, errlen, "malformed entity line (expected {\"account\":\"A\",\"table\":\"T\","
                 "\"ticks\":N,\"entity\":{...}} as tabled export writes it)");
        return -1;
    }
    if (names_ok(out, err, errlen) != 0)
        return -1;
    unsigned long long ticks = 0;   /* 19 digits at most: no overflow */
    int digits = 0;
    for (; p < end && isdigit((unsigned char)*p) && digits < 19; p++, digits++)
        ticks = ticks * 10 + (unsigned)(*p - '0');
    if (!digits || (p < end && isdigit((unsigned char)*p)) ||
        ticks < (unsigned long long)EDM_DATETIME_MIN_TICKS ||
        ticks > (unsigned long long)EDM_DATETIME_MAX_TICKS) {
        snprintf(err, errlen, "\"ticks\" must be the entity's Timestamp in 100 ns ticks, "
                 "%lld (1601-01-01) to %lld (9999-12-31)", (long long)EDM_DATETIME_MIN_TICKS,
                 (long long)EDM_DATETIME_MAX_TICKS);
        return -1;
    }
    if (!literal(&p, end, ",\"entity\":") || end - p < 3 || end[-1] != '}') {
        snprintf(err, errlen, "malformed entity line (no \"entity\" object last)");
        return -1;
    }
    enum terr te = entity_json_parse(a, p, (size_t)(end - 1 - p), ENTITY_PARSE_INSERT, &out->e);
    if (te != TERR_NONE) {
        snprintf(err, errlen, "entity refused (%s: %s)", terr_info(te)->code,
                 terr_info(te)->message);
        return -1;
    }
    out->e.timestamp = (int64_t)ticks;
    return 0;
}

/* A string member of a yajl object, or NULL. */
static const char *member(yajl_val obj, const char *key)
{
    const char *path[] = {key, NULL};
    yajl_val v = yajl_tree_get(obj, path, yajl_t_string);
    return v ? YAJL_GET_STRING(v) : NULL;
}

/* Base64 text s into out->raw; 0, or -1 with a message naming what. */
static int base64(struct arena *a, const char *s, const char *what, struct dump_line *out,
                  char *err, size_t errlen)
{
    uint8_t *raw = NULL;
    size_t n = 0;
    if (edm_base64_decode(a, s, strlen(s), &raw, &n) != 0) {
        snprintf(err, errlen, "\"%s\" is not base64", what);
        return -1;
    }
    out->raw = raw;
    out->raw_len = n;
    return 0;
}

/* The other lines: header, service properties, table. */
static int read_other(struct arena *a, yajl_val obj, struct dump_line *out, char *err,
                      size_t errlen)
{
    const char *hp[] = {"tabled-export", NULL};
    yajl_val h = yajl_tree_get(obj, hp, yajl_t_any);
    if (h) {
        out->kind = DUMP_LINE_HEADER;
        if (!YAJL_IS_INTEGER(h)) {
            snprintf(err, errlen, "\"tabled-export\" must be the format version, a number");
            return -1;
        }
        out->format = YAJL_GET_INTEGER(h);
        return 0;
    }
    const char *acct = member(obj, "account"), *tab = member(obj, "table");
    const char *props = member(obj, "service-properties"), *acl = member(obj, "acl");
    const char *ep[] = {"entity", NULL};
    if (!acct || yajl_tree_get(obj, ep, yajl_t_any) || (!tab && !props) || (tab && props)) {
        snprintf(err, errlen, "not a line of a tabled export (a header, service properties, "
                 "table or entity line)");
        return -1;
    }
    out->account = arena_strdup(a, acct);
    out->table = tab ? arena_strdup(a, tab) : NULL;
    if (names_ok(out, err, errlen) != 0)
        return -1;
    if (props) {
        out->kind = DUMP_LINE_PROPS;
        return base64(a, props, "service-properties", out, err, errlen);
    }
    out->kind = DUMP_LINE_TABLE;
    if (acl && base64(a, acl, "acl", out, err, errlen) != 0)
        return -1;
    struct acl decoded;
    if (acl_decode(out->raw, out->raw_len, &decoded) != 0 || !acl_valid(&decoded)) {
        snprintf(err, errlen, "\"acl\" does not hold stored access policies as tabled export "
                 "writes them");
        return -1;
    }
    return 0;
}

int dump_line_read(struct arena *a, const char *line, size_t len, struct dump_line *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *end = line + len;
    while (end > line && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    static const char entity_prefix[] = "{\"account\":\"";
    size_t n = (size_t)(end - line);
    if (n > sizeof entity_prefix && memcmp(line, entity_prefix, sizeof entity_prefix - 1) == 0 &&
        memmem(line, n, "\",\"ticks\":", 10))
        return read_entity(a, line, end, out, err, errlen);
    /* yajl_tree builds and frees its tree recursively: bound the nesting
       first, as for every JSON body the server reads. */
    char why[200] = "";
    int rc = jsonwalk_parse(NULL, NULL, line, n, JSONWALK_MAX_DEPTH, JSONWALK_NO_NUL, why,
                            sizeof why);
    if (rc != JSONWALK_OK) {
        snprintf(err, errlen, "not a JSON object (%s)", why[0] ? why : "malformed");
        return -1;
    }
    char *z = arena_strndup(a, line, n);
    yajl_val obj = yajl_tree_parse(z, why, sizeof why);
    if (!YAJL_IS_OBJECT(obj)) {
        snprintf(err, errlen, "not a JSON object");
        yajl_tree_free(obj);
        return -1;
    }
    rc = read_other(a, obj, out, err, errlen);
    yajl_tree_free(obj);
    return rc;
}
