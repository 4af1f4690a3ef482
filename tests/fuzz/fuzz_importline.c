/* fuzz_importline.c - libFuzzer target for tabled import's line reader
 * (codec/dump_line.c: dump_line_read, which the import's checking pass and
 * its writing pass both use), inputs up to 4 MiB: never a crash, a
 * recursion per level or a read past the input (copied into an exactly
 * sized heap block, not NUL-terminated). What it takes is what the import
 * may write: names the service allows, ticks in the Edm.DateTime range, an
 * ACL Get Table ACL reads, an entity with its keys; what it refuses gets a
 * reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "codec/acl.h"
#include "codec/edm.h"
#include "codec/dump_line.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size ? size : 1);
    if (!line)
        abort();
    memcpy(line, data, size);
    struct arena *a = arena_new(65536);
    struct dump_line l;
    char err[512] = "";
    if (dump_line_read(a, line, size, &l, err, sizeof err) == 0) {
        struct acl acl;
        switch (l.kind) {
        case DUMP_LINE_HEADER:
            break;
        case DUMP_LINE_PROPS:
            if (!dump_name_ok(l.account, 0) || l.table)
                abort();
            break;
        case DUMP_LINE_TABLE:
            if (!dump_name_ok(l.account, 0) || !dump_name_ok(l.table, 1) ||
                acl_decode(l.raw, l.raw_len, &acl) != 0 || !acl_valid(&acl))
                abort();   /* an ACL Get Table ACL would answer 500 for */
            break;
        case DUMP_LINE_ENTITY:
            if (!dump_name_ok(l.account, 0) || !dump_name_ok(l.table, 1) || !l.e.pk ||
                !l.e.rk || l.e.timestamp < EDM_DATETIME_MIN_TICKS ||
                l.e.timestamp > EDM_DATETIME_MAX_TICKS)
                abort();
            break;
        default:
            abort();
        }
    } else if (!err[0]) {
        abort();           /* refused without a reason */
    }
    arena_free(a);
    free(line);
    return 0;
}
