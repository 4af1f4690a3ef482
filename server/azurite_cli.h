/* azurite_cli.h - "azurite-table" and "azurite": the peer emulator's
 * command lines (Azurite's table command and its combined command)
 * translated into tabled's own flags.
 *
 * tabled started under the name azurite-table or azurite (installed links)
 * reads Azurite's flags and its AZURITE_ACCOUNTS variable, builds the
 * equivalent tabled argument vector, and after start prints the readiness
 * lines that Azurite prints, so scripts, containers and test frameworks
 * written for Azurite keep working. Under the name azurite the Blob and
 * Queue ports are opened too (server/absent.h). What tabled cannot honour
 * is refused with a message naming the flag. */
#ifndef TABLED_AZURITE_CLI_H
#define TABLED_AZURITE_CLI_H
#include <stddef.h>
#include <stdio.h>

#include "server/config.h"

#define AZURITE_MAX_ARGS 160

/* Which of the peer's commands argv[0] names. */
enum azurite_name { AZURITE_NONE, AZURITE_TABLE, AZURITE_ALL };
/* AZURITE_TABLE for ".../azurite-table", AZURITE_ALL for ".../azurite",
 * else AZURITE_NONE. */
enum azurite_name azurite_cli_name(const char *argv0);

/* The translation of one Azurite command line. */
struct azurite_cli {
    int argc;                        /* tabled argv: argv[0] = "tabled" */
    char *argv[AZURITE_MAX_ARGS + 1];
    char store[16384];               /* the strings argv points into */
    size_t used;
    const char *prog;                /* "azurite-table" or "azurite" */
    int all;                         /* azurite: Blob and Queue ports too */
    int help, version;               /* -h/--help, -v/--version given */
    int https;                       /* --cert given: the table port speaks TLS */
    int port;                        /* --tablePort (default 10002) */
    char blob_host[256], queue_host[256]; /* azurite: --blobHost, --queueHost */
    int blob_port, queue_port;       /* azurite: --blobPort (10000), --queuePort
                                        (10001) */
    char debug_log[1024];            /* -d FILE, or "" */
    char cert[1024], key[1024], pwd[256]; /* --cert, --key, --pwd as given */
    char ignored[256];               /* other services' flags, skipped */
    int custom_accounts;             /* AZURITE_ACCOUNTS was set */
    char accounts[CONFIG_MAX_ACCOUNTS][32]; /* its account names, lower-case */
    size_t naccounts;
};

/* Translates Azurite's argv (argv[0] names the command: azurite-table, or
 * azurite for the combined command line) and the value of AZURITE_ACCOUNTS
 * (NULL when unset) into tabled flags. Returns 0, or -1 with a message
 * naming the flag. */
int azurite_cli_parse(struct azurite_cli *az, int argc, char **argv, const char *accounts_env,
                      char *err, size_t errlen);

/* After config_parse_args of az->argv: drops devstoreaccount1 when
 * AZURITE_ACCOUNTS named other accounts (as Azurite does), and with --cert
 * turns the plain HTTP listener off (cfg->port = -1): the table port
 * speaks HTTPS only, as Azurite's. */
void azurite_cli_apply(const struct azurite_cli *az, struct config *cfg);

/* For --cert with --pwd (a PFX/PKCS#12 file, or a PEM certificate with an
 * encrypted key): writes the certificate chain and the decrypted key as PEM
 * files into a fresh 0700 directory and points cfg->tls_cert/tls_key at
 * them. dir receives the directory (to remove at exit with
 * azurite_cli_cleanup). Returns 0 (also when nothing had to be done) or -1. */
int azurite_cli_tls_files(const struct azurite_cli *az, struct config *cfg, char *dir,
                          size_t dircap, char *err, size_t errlen);
/* Removes what azurite_cli_tls_files wrote. */
void azurite_cli_cleanup(const char *dir);

/* Azurite's help text for az->prog. */
void azurite_cli_usage(const struct azurite_cli *az, FILE *out);

#endif
