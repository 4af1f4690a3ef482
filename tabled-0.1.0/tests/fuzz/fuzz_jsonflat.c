/* fuzz_jsonflat.c - libFuzzer target for the entity-body fast path: any
 * body jsonflat accepts must be accepted by yajl (configured as
 * entity_json.c configures it) with the very same callbacks and arguments;
 * a declined body is yajl's alone. The input is copied into an exactly
 * sized heap block so AddressSanitizer catches a read past its end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/jsontrace.h"

static struct trace tf, ty;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    if (run_flat(body, size, &tf) == JSONFLAT_OK) {
        if (!run_yajl(body, size, &ty))
            abort();   /* the fast path accepted what yajl refuses */
        if (!tf.overflow && !ty.overflow && strcmp(tf.buf, ty.buf) != 0)
            abort();   /* different callbacks */
    }
    free(body);
    return 0;
}
