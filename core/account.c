/* account.c - see account.h. */
#include "core/account.h"

#include <strings.h>

/* A linear scan: a process serves a few accounts (at most
 * CONFIG_MAX_ACCOUNTS), and names compare case-insensitively. */
const struct account_cfg *account_find(const struct account_cfg *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}
