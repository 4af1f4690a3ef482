/* badplugin.c - a plug-in built for another interface version, so that
 * the conformance suite can check that the loader refuses it. */
#include "backends/backend.h"

static const struct backend_ops bad_ops = {
    .version = TABLED_BACKEND_VERSION + 41,
    .name = "bad",
};

__attribute__((visibility("default")))
const struct backend_ops *tabled_backend_init(void)
{
    return &bad_ops;
}
