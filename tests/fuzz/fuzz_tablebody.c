/* fuzz_tablebody.c - libFuzzer target for Create Table bodies
 * (codec/table_json.c), inputs up to the whole body limit: the parse
 * must never crash, recurse per level or read past the input (copied into
 * an exactly sized heap block, not NUL-terminated); a found name lies in
 * the arena with its length. Where the input is JSON that the depth limit
 * lets through and holds no NUL byte, yajl_tree (safe at that depth) is the
 * oracle: it must find the same first TableName, cut at a "\u0000" as a C
 * string is, and refuse what table_json_name refuses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "core/arena.h"
#include "core/jsonwalk.h"
#include "codec/table_json.h"

/* The first top-level TableName string of a yajl tree, or NULL. */
static const char *tree_name(yajl_val root)
{
    if (!YAJL_IS_OBJECT(root))
        return NULL;
    for (size_t i = 0; i < root->u.object.len; i++) {
        if (strcmp(root->u.object.keys[i], "TableName") != 0)
            continue;
        yajl_val v = root->u.object.values[i];
        return YAJL_IS_STRING(v) ? v->u.string : NULL;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    struct arena *a = arena_new(4096);
    const char *name = NULL;
    size_t n = 0;
    enum terr e = table_json_name(a, body, size, &name, &n);
    if (e != TERR_NONE && e != TERR_InvalidInput)
        abort();
    if (e == TERR_NONE && (!name || n == 0 || n > size || name[n] != '\0'))
        abort();
    if (!memchr(body, '\0', size) &&
        jsonwalk_parse(NULL, NULL, body, size, JSONWALK_MAX_DEPTH, 0, NULL, 0) == JSONWALK_OK) {
        char *z = malloc(size + 1);
        memcpy(z, body, size);
        z[size] = '\0';
        yajl_val root = yajl_tree_parse(z, NULL, 0);
        if (!root)
            abort();   /* jsonwalk accepted what yajl_tree refuses */
        const char *tn = tree_name(root);
        if (e == TERR_NONE) {
            if (!tn || strlen(tn) != strnlen(name, n) || memcmp(tn, name, strlen(tn)) != 0)
                abort();   /* a different name */
        } else if (tn && tn[0]) {
            abort();   /* refused, yet yajl_tree found a non-empty name */
        }
        yajl_tree_free(root);
        free(z);
    }
    arena_free(a);
    free(body);
    return 0;
}
