/* fuzz_entitybody.c - libFuzzer target for entity bodies as Insert, Update,
 * Merge and $batch parts hand them to codec/entity_json.c, inputs up to
 * the whole body limit, copied into an exactly sized heap block (a batch
 * part is a slice, not NUL-terminated). Both parse modes must answer
 * without crashing or recursing per level; an entity accepted as an insert
 * must come back, written with full metadata, as the same keys and
 * properties when parsed again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "codec/entity_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    struct arena *a = arena_new(4096);
    struct entity e, again;
    enum terr u = entity_json_parse(a, body, size, ENTITY_PARSE_UPDATE, &e);
    enum terr t = entity_json_parse(a, body, size, ENTITY_PARSE_INSERT, &e);
    if (t == TERR_NONE && u != TERR_NONE)
        abort();   /* an insert body every update refuses */
    if (t == TERR_NONE) {
        if (!e.pk || !e.rk || e.nprops > 252)
            abort();
        e.timestamp = 638500000000000000LL;
        struct entity_json_ctx ctx = {ODATA_FULL, "http://127.0.0.1:10002/devstoreaccount1",
                                      "devstoreaccount1", "fuzz", NULL, NULL, 0};
        struct buf out;
        buf_init(&out);
        entity_json_write(&out, &e, &ctx);
        if (entity_json_parse(a, out.data, out.len, ENTITY_PARSE_INSERT, &again) != TERR_NONE ||
            again.pk_len != e.pk_len || memcmp(again.pk, e.pk, e.pk_len) != 0 ||
            again.rk_len != e.rk_len || memcmp(again.rk, e.rk, e.rk_len) != 0 ||
            again.nprops != e.nprops)
            abort();   /* what we write, we do not read back the same */
        for (size_t i = 0; i < e.nprops; i++)
            if (again.props[i].name_len != e.props[i].name_len ||
                memcmp(again.props[i].name, e.props[i].name, e.props[i].name_len) != 0 ||
                again.props[i].v.type != e.props[i].v.type)
                abort();
        buf_free(&out);
    }
    arena_free(a);
    free(body);
    return 0;
}
