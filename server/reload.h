/* reload.h - SIGHUP: read the configuration again and apply what can
 * change without a restart (accounts' keys, the TLS certificate and key,
 * the log file and level, the admin token and hosts). */
#ifndef TABLED_RELOAD_H
#define TABLED_RELOAD_H

#include "server/config.h"
#include "server/azurite_cli.h"

struct server;
struct admin;

/* What a reload needs, kept by main() for the life of the process. */
struct reload {
    int argc;                      /* the command line, as parsed at start-up */
    char **argv;
    const struct azurite_cli *az;  /* azurite-table's options, or NULL */
    struct config *cfg;            /* the running configuration, updated in place */
    struct server *srv;
    struct admin *admin;           /* NULL without the admin listener */
};

/* Reloads (struct reload * as void *, for server_set_reload). A bad new
 * configuration is refused with one log line and changes nothing. */
void reload_run(void *arg);

#endif
