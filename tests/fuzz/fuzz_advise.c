/* fuzz_advise.c - libFuzzer target for `tabled advise`'s reader of the
 * advisor document (tools/advise.c: advise_read, then advise_report as the
 * tool prints it), inputs up to the whole body limit: never a crash, a
 * recursion per level or a read past the input (copied into an exactly
 * sized heap block, not NUL-terminated). A document the reader takes is
 * one the depth-limited parse takes, with a "findings" array; one it
 * refuses gets a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/advise.h"
#include "core/jsonwalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    char *body = malloc(size ? size : 1);
    if (!body || !sink)
        abort();
    memcpy(body, data, size);
    char err[256] = "";
    yajl_val doc = advise_read(body, size, err, sizeof err);
    int walk = jsonwalk_parse(NULL, NULL, body, size, JSONWALK_MAX_DEPTH, 0, NULL, 0);
    if (doc) {
        const char *path[] = {"findings", NULL};
        if (walk != JSONWALK_OK || !yajl_tree_get(doc, path, yajl_t_array))
            abort();   /* taken, yet too deep, malformed or without findings */
        for (int fail_on = 0; fail_on <= 3; fail_on++)
            if (advise_report(sink, doc, "http://fuzz", fail_on) < 0)
                abort();
        yajl_tree_free(doc);
    } else if (!err[0]) {
        abort();       /* refused without a reason */
    }
    free(body);
    return 0;
}
