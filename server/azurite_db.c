/* azurite_db.c - an Azurite workspace's table database found on start-up
 * (see azurite_db.h). Only the finding and the command text live here: the
 * import itself is "tabled import", which server/main.c runs. */
#include "server/azurite_db.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define AZURITE_DB_STORE "__tabled_table__"

int azurite_db_take_flag(int *argc, char **argv)
{
    int found = 0, out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], AZURITE_DB_FLAG) == 0)
            found = 1;
        else
            argv[out++] = argv[i];
    }
    for (int i = out; i < *argc; i++)
        argv[i] = NULL;
    if (*argc > 0)
        *argc = out;
    return found;
}

int azurite_db_pending(const char *data_dir, char *db, size_t dbcap, char *store,
                       size_t storecap)
{
    /* Only azurite-table's own layout, DIR/__tabled_table__, is a workspace. */
    size_t n = strlen(data_dir), s = strlen(AZURITE_DB_STORE);
    if (n <= s || strcmp(data_dir + n - s, AZURITE_DB_STORE) != 0 || data_dir[n - s - 1] != '/')
        return 0;
    struct stat st;
    /* A store that exists (even empty) is the user's: never a notice. */
    if (stat(data_dir, &st) == 0 || errno != ENOENT)
        return 0;
    char dir[PATH_MAX], abs[PATH_MAX];
    if (n - s >= sizeof dir)
        return 0;
    memcpy(dir, data_dir, n - s);
    dir[n - s] = '\0';
    if (!realpath(dir, abs))
        return 0;
    const char *sep = strcmp(abs, "/") == 0 ? "" : "/";
    int w = snprintf(db, dbcap, "%s%s%s", abs, sep, AZURITE_DB_FILE);
    int v = snprintf(store, storecap, "%s%s%s", abs, sep, AZURITE_DB_STORE);
    if (w < 0 || (size_t)w >= dbcap || v < 0 || (size_t)v >= storecap)
        return 0;
    return stat(db, &st) == 0 && S_ISREG(st.st_mode);
}

/* Appends s to out (at *used) in single quotes when it holds anything but
 * characters a shell leaves alone. Returns 0 or -1 when out is full. */
static int azurite_db_quote(char *out, size_t cap, size_t *used, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:@%+,",
                    *p))
            plain = 0;
    size_t u = *used;
    if (u + 1 >= cap)
        return -1;
    out[u++] = ' ';
    if (!plain && u + 1 < cap)
        out[u++] = '\'';
    for (const char *p = s; *p; p++) {
        const char *piece = plain || *p != '\'' ? NULL : "'\\''";
        size_t k = piece ? strlen(piece) : 1;
        if (u + k + 2 >= cap)
            return -1;
        if (piece)
            memcpy(out + u, piece, k);
        else
            out[u] = *p;
        u += k;
    }
    if (!plain)
        out[u++] = '\'';
    out[u] = '\0';
    *used = u;
    return 0;
}

int azurite_db_command(const char *db, const char *backend, const char *data_dir, char *out,
                       size_t outcap)
{
    int w = snprintf(out, outcap, "tabled import --from-azurite");
    if (w < 0 || (size_t)w >= outcap)
        return -1;
    size_t used = (size_t)w;
    if (azurite_db_quote(out, outcap, &used, db) < 0 ||
        azurite_db_quote(out, outcap, &used, "--backend") < 0 ||
        azurite_db_quote(out, outcap, &used, backend) < 0 ||
        azurite_db_quote(out, outcap, &used, "--data") < 0 ||
        azurite_db_quote(out, outcap, &used, data_dir) < 0)
        return -1;
    return 0;
}
