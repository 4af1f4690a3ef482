/* storescan.c - what a stopped store holds, read through the backend
 * itself (for the Delete Table tests).
 *
 *     storescan BACKEND DIR
 *
 * prints one line per table row, per table id that has entities and per
 * purge record (key layouts in store/keys.h):
 *     table ACCOUNT NAME ID
 *     entities ID COUNT
 *     purge ID RESUME_KEY_BYTES
 *     other TAG_BYTE COUNT          (keys of any other kind, by first byte)
 * Exit status 0, or 1 with a message on stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/registry.h"

static uint64_t be64_at(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Prints a table row: 't' account 0x00 lower(name) -> u8 1, be64 id, ... */
static void table_row(const unsigned char *k, size_t kl, const unsigned char *v, size_t vl)
{
    const unsigned char *nul = memchr(k + 1, 0, kl - 1);
    if (!nul || vl < 9) {
        printf("other t 1\n");
        return;
    }
    printf("table %.*s %.*s %llu\n", (int)(nul - k - 1), (const char *)k + 1,
           (int)(k + kl - nul - 1), (const char *)nul + 1, (unsigned long long)be64_at(v + 1));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: storescan BACKEND DIR\n");
        return 1;
    }
    char err[512] = "";
    const struct backend_ops *ops = backend_lookup(argv[1], err, sizeof err);
    if (!ops) {
        fprintf(stderr, "storescan: %s\n", err);
        return 1;
    }
    struct backend_options o = {.data_dir = argv[2], .durability = BACKEND_DURABLE_NONE};
    struct backend_store *st;
    if (ops->open(&o, &st, err, sizeof err) != BACKEND_OK) {
        fprintf(stderr, "storescan: open %s: %s\n", argv[2], err);
        return 1;
    }
    struct backend_iter *it;
    if (ops->iter_open(st, NULL, 0, NULL, 0, &it, err, sizeof err) != BACKEND_OK) {
        fprintf(stderr, "storescan: %s\n", err);
        ops->close(st);
        return 1;
    }
    const void *kp, *vp;
    size_t kl, vl;
    int rc;
    uint64_t cur = 0, count = 0;
    size_t other[256] = {0};
    while ((rc = ops->iter_next(it, &kp, &kl, &vp, &vl)) == 1) {
        const unsigned char *k = kp, *v = vp;
        if (k[0] == 'e' && kl >= 9) {
            uint64_t id = be64_at(k + 1);
            if (count && id != cur) {
                printf("entities %llu %llu\n", (unsigned long long)cur, (unsigned long long)count);
                count = 0;
            }
            cur = id;
            count++;
        } else if (k[0] == 't' && kl > 1) {
            table_row(k, kl, v, vl);
        } else if (k[0] == 'd' && kl == 9) {
            printf("purge %llu %zu\n", (unsigned long long)be64_at(k + 1), vl ? vl - 1 : 0);
        } else {
            other[k[0]]++;
        }
    }
    if (count)
        printf("entities %llu %llu\n", (unsigned long long)cur, (unsigned long long)count);
    for (int i = 0; i < 256; i++)
        if (other[i])
            printf("other %02x %zu\n", i, other[i]);
    ops->iter_close(it);
    ops->close(st);
    if (rc < 0) {
        fprintf(stderr, "storescan: reading the store failed (%d)\n", rc);
        return 1;
    }
    return 0;
}
