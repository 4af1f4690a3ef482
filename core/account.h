/* account.h - one storage account as configured: its name and keys. What
 * the lower layers need of the configuration's accounts (authentication
 * in auth/, the entity counters in core/metrics.h and store/), without
 * the whole configuration (server/config.h). */
#ifndef TABLED_ACCOUNT_H
#define TABLED_ACCOUNT_H
#include <stddef.h>

#define CONFIG_MAX_ACCOUNTS 64
#define CONFIG_MAX_KEY_BYTES 128

struct account_cfg {
    char name[64];                          /* lower-case, 3-24 chars */
    unsigned char key1[CONFIG_MAX_KEY_BYTES];/* base64-decoded primary key */
    size_t key1_len;
    unsigned char key2[CONFIG_MAX_KEY_BYTES];/* secondary key (may be empty) */
    size_t key2_len;
};

/* The account of that name among v[0..n) (case-insensitive), or NULL. */
const struct account_cfg *account_find(const struct account_cfg *v, size_t n,
                                       const char *name);

/* How much a write must be durable before it is acknowledged (--durability):
 * the store's group commit (store/store.h) and the backends' syncs. */
enum durability { DURABILITY_NONE = 0, DURABILITY_BATCH = 1, DURABILITY_SYNC = 2 };

#endif
